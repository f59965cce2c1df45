package dev.ncclguard.log;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.URISyntaxException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class LogTest {
    private final ByteArrayOutputStream captured = new ByteArrayOutputStream();
    private final PrintStream err = new PrintStream(captured, true, StandardCharsets.UTF_8);

    @TempDir
    Path temp;

    @AfterEach
    void backToDefaults() {
        Log.configure(false);
    }

    private String stderr() {
        return captured.toString(StandardCharsets.UTF_8);
    }

    @Test
    void stderrLinesArePrefixed() {
        Log.configure(false, null, () -> err);
        Log.info("agent installed");
        Log.warn("cannot read ncclUniqueId");
        assertEquals("ncclguard: agent installed" + System.lineSeparator()
                + "ncclguard: cannot read ncclUniqueId" + System.lineSeparator(), stderr());
    }

    @Test
    void errorPrintsTheFailureAfterTheLine() {
        Log.configure(false, null, () -> err);
        Log.error("tracker failed", new IllegalStateException("boom"));
        String[] lines = stderr().split(System.lineSeparator());
        assertEquals("ncclguard: tracker failed", lines[0]);
        assertEquals("java.lang.IllegalStateException: boom", lines[1]);
        assertTrue(lines[2].startsWith("\tat dev.ncclguard.log.LogTest."), lines[2]);
    }

    @Test
    void onceLogsAKeyOnlyTheFirstTime() {
        Log.configure(false, null, () -> err);
        for (int i = 0; i < 5; i++) {
            Log.once("bridge.read", "cannot read argument " + i);
        }
        Log.once("bridge.write", "another failure");
        assertEquals("ncclguard: cannot read argument 0" + System.lineSeparator()
                + "ncclguard: another failure" + System.lineSeparator(), stderr());
    }

    @Test
    void onceStopsAfterTooManyDistinctKeysAndSaysSo() {
        Log.configure(false, null, () -> err);
        for (int i = 0; i < Log.MAX_ONCE_KEYS + 50; i++) {
            Log.once("key" + i, "failure " + i);
        }
        List<String> lines = stderr().lines().toList();
        assertEquals(Log.MAX_ONCE_KEYS + 1, lines.size());
        assertEquals("ncclguard: too many distinct agent failures; further ones are not logged",
                lines.get(lines.size() - 1));
    }

    @Test
    void applicationLoggingGoesToTheApplicationsSlf4jProvider() throws Exception {
        Path logFile = temp.resolve("app.log");
        try (URLClassLoader app = isolated(jarOf(org.slf4j.LoggerFactory.class),
                jarOf(org.slf4j.simple.SimpleLogger.class))) {
            // slf4j-simple reads its configuration once, when the application's SLF4J starts.
            System.setProperty("org.slf4j.simpleLogger.logFile", logFile.toString());
            try {
                Log.configure(true, List.of(app), () -> err);
                Log.info("agent installed");
                Log.warn("tracking paused");
                Log.error("tracker failed", new IllegalStateException("boom"));
            } finally {
                System.clearProperty("org.slf4j.simpleLogger.logFile");
            }
        }
        String log = Files.readString(logFile);
        assertTrue(log.contains("INFO dev.ncclguard.agent - agent installed"), log);
        assertTrue(log.contains("WARN dev.ncclguard.agent - tracking paused"), log);
        assertTrue(log.contains("ERROR dev.ncclguard.agent - tracker failed"), log);
        assertTrue(log.contains("java.lang.IllegalStateException: boom"), log);
        assertEquals("", stderr());
    }

    @Test
    void applicationWithoutSlf4jProviderFallsBackToStderrAndSaysSoOnce() throws Exception {
        try (URLClassLoader app = isolated(jarOf(org.slf4j.LoggerFactory.class))) {
            Log.configure(true, List.of(app), () -> err);
            Log.warn("first");
            Log.warn("second");
        }
        assertEquals(List.of(
                "ncclguard: logging=application: no SLF4J provider in the application; logging to stderr instead",
                "ncclguard: first",
                "ncclguard: second"), stderr().lines().toList());
    }

    @Test
    void applicationWithoutSlf4jAtAllFallsBackToStderr() throws Exception {
        try (URLClassLoader app = isolated()) {
            Log.configure(true, List.of(app), () -> err);
            Log.warn("first");
        }
        assertEquals(List.of(
                "ncclguard: logging=application: no SLF4J in the application; logging to stderr instead",
                "ncclguard: first"), stderr().lines().toList());
    }

    @Test
    void applicationThatChoseTheNopProviderIsHonoured() throws Exception {
        try (URLClassLoader app = withProvider(NopProviderForTest.class)) {
            Log.configure(true, List.of(app), () -> err);
            Log.warn("silenced by the application's choice");
        }
        assertEquals("", stderr());
    }

    // --- the exit ---

    @Test
    void exitLinesAlsoGoToStderrWhenTheApplicationsLoggingMayHaveStopped() throws Exception {
        try (URLClassLoader app = withProvider(RecordingProviderForTest.class)) {
            Log.configure(true, List.of(app), () -> err);
            Log.warn("before the exit");
            Log.exiting();
            Log.warn("during the exit");
            assertEquals(List.of("WARN dev.ncclguard.agent - before the exit", "WARN dev.ncclguard.agent - during the exit"),
                    recorded(app));
        }
        assertEquals(List.of("ncclguard: during the exit"), stderr().lines().toList());
    }

    @Test
    void exitLinesGoOnlyToALoggingKnownToBeStillWriting() throws Exception {
        Path logFile = temp.resolve("app.log");
        try (URLClassLoader app = simpleLoggingTo(logFile)) {
            Log.configure(true, List.of(app), () -> err);
            Log.exiting();
            Log.warn("during the exit");
        }
        assertTrue(Files.readString(logFile).contains("WARN dev.ncclguard.agent - during the exit"));
        assertEquals("", stderr());
    }

    @Test
    void theWarningBeforeExitIsOnStderrWhateverTheLogging() throws Exception {
        Path logFile = temp.resolve("app.log");
        try (URLClassLoader app = simpleLoggingTo(logFile)) {
            Log.configure(true, List.of(app), () -> err);
            Log.exiting();
            Log.exitWarning("a call into NCCL or CUDA never returned");
        }
        assertTrue(Files.readString(logFile).contains("WARN dev.ncclguard.agent - a call into NCCL or CUDA never returned"));
        assertEquals(List.of("ncclguard: a call into NCCL or CUDA never returned"), stderr().lines().toList());
    }

    // --- text=log ---

    @Test
    void logReportPutsEachEntryUnderItsLoggerAtItsLevel() throws Exception {
        Path logFile = temp.resolve("app.log");
        String why;
        try (URLClassLoader app = simpleLoggingTo(logFile)) {
            Log.configure(false, List.of(app), () -> err);
            why = Log.logReport(List.of(new Log.Entry("dev.ncclguard.leak.communicator", true, "LEAK: a"),
                    new Log.Entry("dev.ncclguard.cleanup", false, "destroyed")));
        }
        assertEquals(null, why, "slf4j-simple writes as it is called: nothing for stderr");
        String log = Files.readString(logFile);
        assertTrue(log.contains("WARN dev.ncclguard.leak.communicator - LEAK: a"), log);
        assertTrue(log.contains("INFO dev.ncclguard.cleanup - destroyed"), log);
    }

    @Test
    void logReportToALoggingThatMayHaveStoppedAsksForACopyOnStderr() throws Exception {
        String why;
        try (URLClassLoader app = withProvider(RecordingProviderForTest.class)) {
            Log.configure(false, List.of(app), () -> err);
            why = Log.logReport(List.of(new Log.Entry("dev.ncclguard.leak", true, "SUMMARY: ncclguard: 1 leaked communicator")));
            assertEquals(List.of("WARN dev.ncclguard.leak - SUMMARY: ncclguard: 1 leaked communicator"), recorded(app));
        }
        assertTrue(why.endsWith("which may have stopped in a shutdown hook of its own before the agent's exit hook ran;"
                + " a copy follows on stderr"), why);
    }

    @Test
    void logReportWithoutSlf4jSaysWhyTheReportGoesToStderr() throws Exception {
        try (URLClassLoader app = isolated()) {
            Log.configure(false, List.of(app), () -> err);
            assertEquals("no SLF4J in the application; the report follows on stderr",
                    Log.logReport(List.of(new Log.Entry("dev.ncclguard.leak", false, "SUMMARY"))));
        }
    }

    @Test
    void slf4jIsFoundThroughTheApplicationsLoaderBeforeTheSystemOnes() throws Exception {
        Path logFile = temp.resolve("app.log");
        try (URLClassLoader app = simpleLoggingTo(logFile)) {
            Log.configure(true, null, () -> err);
            Log.applicationLoader(app); // the context loader of the application's first NCCL call
            Log.warn("through the application's own SLF4J");
        }
        assertTrue(Files.readString(logFile).contains("WARN dev.ncclguard.agent - through the application's own SLF4J"));
    }

    @Test
    void slf4jIsNotLookedUpUntilTheFirstLine() throws Exception {
        AtomicInteger lookups = new AtomicInteger();
        try (URLClassLoader app = new URLClassLoader(new URL[0], ClassLoader.getPlatformClassLoader()) {
            @Override
            protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
                if (name.startsWith("org.slf4j.")) {
                    lookups.incrementAndGet();
                }
                return super.loadClass(name, resolve);
            }
        }) {
            Log.configure(true, List.of(app), () -> err);
            assertEquals(0, lookups.get());
            Log.info("first line");
            assertTrue(lookups.get() > 0);
        }
    }

    @Test
    void aFailingStderrNeverThrows() {
        Log.configure(false, null, () -> {
            throw new IllegalStateException("no stderr");
        });
        Log.warn("lost");
        Log.error("lost too", new RuntimeException());
        assertFalse(stderr().contains("lost"));
    }

    /** The application's SLF4J with slf4j-simple writing to {@code logFile} (read once, as it starts). */
    private static URLClassLoader simpleLoggingTo(Path logFile) throws Exception {
        URLClassLoader app = isolated(jarOf(org.slf4j.LoggerFactory.class), jarOf(org.slf4j.simple.SimpleLogger.class));
        System.setProperty("org.slf4j.simpleLogger.logFile", logFile.toString());
        try {
            Class.forName("org.slf4j.LoggerFactory", true, app).getMethod("getILoggerFactory").invoke(null);
        } finally {
            System.clearProperty("org.slf4j.simpleLogger.logFile");
        }
        return app;
    }

    /** The application's SLF4J with {@code provider} (a class of the test classes) as its only provider. */
    private URLClassLoader withProvider(Class<?> provider) throws Exception {
        Path services = temp.resolve("services-" + provider.getSimpleName());
        Files.createDirectories(services.resolve("META-INF/services"));
        Files.writeString(services.resolve("META-INF/services/org.slf4j.spi.SLF4JServiceProvider"),
                provider.getName() + "\n");
        return isolated(jarOf(org.slf4j.LoggerFactory.class), jarOf(provider), services);
    }

    @SuppressWarnings("unchecked")
    private static List<String> recorded(ClassLoader app) throws Exception {
        return List.copyOf((List<String>) Class.forName(RecordingProviderForTest.class.getName(), true, app)
                .getField("LINES").get(null));
    }

    private static Path jarOf(Class<?> type) throws URISyntaxException {
        return Path.of(type.getProtectionDomain().getCodeSource().getLocation().toURI());
    }

    /** A class loader standing for the application's: only the given jars, over the platform loader. */
    private static URLClassLoader isolated(Path... entries) throws IOException {
        URL[] urls = new URL[entries.length];
        for (int i = 0; i < entries.length; i++) {
            urls[i] = entries[i].toUri().toURL();
        }
        return new URLClassLoader(urls, ClassLoader.getPlatformClassLoader());
    }
}
