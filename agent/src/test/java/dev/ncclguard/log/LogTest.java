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
        assertTrue(log.contains("INFO ncclguard - agent installed"), log);
        assertTrue(log.contains("WARN ncclguard - tracking paused"), log);
        assertTrue(log.contains("ERROR ncclguard - tracker failed"), log);
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
        Path services = temp.resolve("services");
        Files.createDirectories(services.resolve("META-INF/services"));
        Files.writeString(services.resolve("META-INF/services/org.slf4j.spi.SLF4JServiceProvider"),
                NopProviderForTest.class.getName() + "\n");
        try (URLClassLoader app = isolated(jarOf(org.slf4j.LoggerFactory.class),
                jarOf(NopProviderForTest.class), services)) {
            Log.configure(true, List.of(app), () -> err);
            Log.warn("silenced by the application's choice");
        }
        assertEquals("", stderr());
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
