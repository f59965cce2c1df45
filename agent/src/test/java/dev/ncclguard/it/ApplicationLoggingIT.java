package dev.ncclguard.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ncclguard.it.apps.LoggingApp;
import dev.ncclguard.testkit.ChildJvm;
import dev.ncclguard.testkit.Output;
import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The report and the agent's lines in the application's own logging, a real Logback configured
 * by the application from its start: {@code text=log} puts each leak block there, and nothing said
 * at exit is lost when Logback's {@code <shutdownHook/>} stopped it before the agent's exit hook.
 */
class ApplicationLoggingIT {
    private static final Path APP_LIBS = Path.of(System.getProperty("ncclguard.test.appLibs"));
    private static final Path SAMPLES_CLASSES = Path.of(System.getProperty("ncclguard.test.samplesClasses"));
    private static final String HUNG = "ncclguard: a call into NCCL or CUDA never returned; ending the process with _exit(0)";

    @TempDir
    Path dir;

    private Path log() {
        return dir.resolve("app.log");
    }

    /** The application: LoggingApp and what it runs, SLF4J and Logback writing {@link #log()}. */
    private ChildJvm app(boolean shutdownHook) throws Exception {
        Path config = Files.writeString(dir.resolve("logback.xml"), "<configuration>\n"
                + (shutdownHook ? "  <shutdownHook/>\n" : "")
                + "  <appender name=\"FILE\" class=\"ch.qos.logback.core.FileAppender\">\n"
                + "    <file>" + log() + "</file>\n"
                + "    <encoder><pattern>%level %logger - %msg%n</pattern></encoder>\n"
                + "  </appender>\n"
                + "  <root level=\"INFO\"><appender-ref ref=\"FILE\"/></root>\n"
                + "</configuration>\n");
        String cp = String.join(File.pathSeparator, AgentSafetyIT.testClasspath(), SAMPLES_CLASSES.toString(),
                lib("slf4j-api-"), lib("logback-classic-"), lib("logback-core-"));
        return ChildJvm.sample().jvmArg("-Dlogback.configurationFile=" + config).mainClass(cp, LoggingApp.class.getName());
    }

    private static String lib(String prefix) throws Exception {
        try (var files = Files.list(APP_LIBS)) {
            return files.filter(p -> p.getFileName().toString().startsWith(prefix)).findFirst()
                    .orElseThrow(() -> new AssertionError("no " + prefix + "*.jar in " + APP_LIBS)).toString();
        }
    }

    @Test
    void textLogPutsEachLeakBlockInTheApplicationsLogbackWithALinkToItsDocs() throws Exception {
        Output r = app(false).agent("text=log").run("one-rank-leaks");
        assertEquals(0, r.exitCode(), r.describe());
        String log = Files.readString(log());
        assertTrue(log.startsWith("INFO app - app started\n"), log);
        assertTrue(log.contains("WARN dev.ncclguard.leak.communicator - LEAK: ncclCommDestroy or ncclCommAbort was not"
                + " called before the JVM exited: communicator 0x"), log);
        assertTrue(log.contains(" for more information.\nCreated on thread \"rank-1\" at "), log);
        assertTrue(log.contains("\tat dev.ncclguard.it.apps.OneRankLeaksApp.rank(OneRankLeaksApp.java:"), log);
        assertTrue(log.contains("https://ncclguard.dev/docs/leaks.md#leaked-communicator"), log);
        assertTrue(log.contains("WARN dev.ncclguard.leak - SUMMARY: ncclguard: 1 leaked communicator"), log);
        assertFalse(r.stderr().contains("LEAK:") || r.stderr().contains("SUMMARY:"), "nothing on stderr: " + r.describe());
    }

    @Test
    void textLogAfterLogbacksShutdownHookStoppedItGoesToStderrAndSaysWhy() throws Exception {
        Output r = app(true).agent("text=log").run("one-rank-leaks");
        assertEquals(0, r.exitCode(), r.describe());
        assertTrue(r.stderr().contains("ncclguard: text=log: the application's logging (Logback) was stopped before the"
                + " agent's exit hook ran (an application shutdown hook stops it, as Logback's <shutdownHook/> does);"
                + " the report follows on stderr\n"), r.describe());
        assertTrue(r.stderr().contains("Leaked communicator 0x"), r.describe());
        assertTrue(r.stderr().contains("SUMMARY: ncclguard: 1 leaked communicator"), r.describe());
        String log = Files.readString(log());
        assertTrue(log.contains("app started"), log);
        assertFalse(log.contains("LEAK:"), "Logback was stopped: " + log);
    }

    @Test
    void theWarningBeforeExitReachesStderrWhenLogbacksShutdownHookStoppedIt() throws Exception {
        Output r = hangingCleanup(app(true));
        assertTrue(r.stderr().contains(HUNG), r.describe());
        assertFalse(Files.readString(log()).contains("never returned"), "Logback was stopped");
    }

    @Test
    void theWarningBeforeExitIsInTheApplicationsLogAndOnStderr() throws Exception {
        Output r = hangingCleanup(app(false));
        assertTrue(r.stderr().contains(HUNG), r.describe());
        assertTrue(Files.readString(log()).contains("WARN dev.ncclguard.agent - a call into NCCL or CUDA never returned;"
                + " ending the process with _exit(0)"), Files.readString(log()));
    }

    /** Cleanup whose destroy and abort both hang: the process ends with _exit after the report. */
    private static Output hangingCleanup(ChildJvm app) throws Exception {
        Output r = app.agent("logging=application,action=cleanup,timeout=2s,text=none")
                .env("NCCLEMU_HANG", "ncclCommDestroy,ncclCommAbort").env("NCCLEMU_EXIT_WAITS", "1").timeout(60)
                .run("exit-app", "return");
        assertEquals(0, r.exitCode(), r.describe());
        return r;
    }
}
