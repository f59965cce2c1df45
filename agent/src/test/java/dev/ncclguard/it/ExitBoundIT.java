package dev.ncclguard.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.ncclguard.it.apps.ExitApp;
import dev.ncclguard.it.apps.ManyEventsApp;
import dev.ncclguard.testkit.ChildJvm;
import dev.ncclguard.testkit.Output;
import dev.ncclguard.testkit.ReportJson;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The exit stays within its bound and says only what is true, in child JVMs on the emulator: an
 * application thread still inside its own ncclCommDestroy while System.exit runs, calls that never
 * return (the libraries' exit work still runs, the watchdog ends handlers that hang), a report
 * write that cannot finish, and exits with many leaked events and a short timeout where nothing hangs.
 */
class ExitBoundIT {
    /** A JVM start, the 2 s cleanup bound, and a slow machine. Without the bound, the run never ends. */
    private static final long EXIT_BOUND_MILLIS = 20_000;
    private static final String NEVER_RETURNED = "never returned";
    /** Lifecycle.WRITE_MARGIN_NANOS: how long past the timeout the report write may take. */
    private static final long WRITE_MARGIN_MILLIS = 2_000;
    /**
     * What the exit takes outside the agent's hook: the JVM's shutdown up to it, its teardown after,
     * the emulator's own exit report (8 MB for 200,000 events), on a loaded machine (4.5 s seen with
     * the whole build running on 2 shared cores). Without the bound, the FIFO case never ends.
     */
    private static final long OUTSIDE_THE_HOOK_MILLIS = 8_000;

    @TempDir
    Path dir;

    private String agent(String options) {
        return "action=cleanup,text=none,report=" + dir.resolve("report-%p.json") + "," + options;
    }

    private ChildJvm app(Class<?> main) throws Exception {
        return ChildJvm.sample().mainClass(AgentSafetyIT.testClasspath(), main.getName())
                .env("NCCLEMU_REPORT", dir.resolve("alive-%p.txt").toString());
    }

    private List<Path> files(String prefix) throws Exception {
        try (Stream<Path> s = Files.list(dir)) {
            return s.filter(p -> p.getFileName().toString().startsWith(prefix)).sorted().toList();
        }
    }

    private List<String> alive(String kind) throws Exception {
        List<Path> reports = files("alive-");
        assertEquals(1, reports.size(), "the emulator's exit report: " + reports);
        return Files.readAllLines(reports.get(0)).stream().filter(l -> l.startsWith(kind + " ")).toList();
    }

    private static JsonNode rank(JsonNode report, int rank) {
        return ReportJson.leaks(report, "comm").stream().filter(c -> c.path("details").path("rank").asInt() == rank)
                .findFirst().orElseThrow(() -> new AssertionError("no comm of rank " + rank + ": " + report));
    }

    @Test
    void aCommunicatorTheApplicationIsStillDestroyingIsAbortedAndTheExitStatusKept() throws Exception {
        Output r = app(ExitApp.class).agent(agent("timeout=2s")).env("NCCLEMU_HANG", "ncclCommDestroy")
                .timeout(60).run("exit-while-destroying");
        assertEquals(3, r.exitCode(), r.describe());
        assertTrue(r.millis() < EXIT_BOUND_MILLIS, r.describe());
        JsonNode comm = rank(ReportJson.read(files("report-").get(0)), 0);
        assertEquals("aborted", comm.path("cleanup").asText(), comm.toString());
        assertTrue(comm.path("cleanupNote").asText().startsWith("the application's own release (ncclCommDestroy) had not returned after"),
                comm.toString());
        assertEquals(List.of(), alive("comm"), r.describe());
    }

    @Test
    void aCommunicatorTheApplicationIsStillDestroyingIsNeverReportedAsReleased() throws Exception {
        Output r = app(ExitApp.class).agent(agent("timeout=2s")).env("NCCLEMU_HANG", "ncclCommDestroy,ncclCommAbort")
                .timeout(60).run("exit-while-destroying");
        assertEquals(3, r.exitCode(), r.describe());
        JsonNode comm = rank(ReportJson.read(files("report-").get(0)), 0);
        assertFalse(comm.path("cleanupNote").asText().contains("released by the application"), comm.toString());
        // the abort hangs too: the report says so, and the emulator still lists the comm alive
        assertEquals("timed-out", comm.path("cleanup").asText(), comm.toString());
    }

    /** ProcessExit.EXIT_HANDLERS_MILLIS: what exit(3)'s handlers get before the watchdog's _exit. */
    private static final long EXIT_HANDLERS_MILLIS = 2_000;
    private static final String WATCHDOG_FIRED = "ncclguard: the libraries' exit handlers had not finished after";

    /** The application's thread inside ncclCommDestroy at System.exit(3), and cleanup's abort of it hangs too. */
    private ChildJvm trulyHung(String options) throws Exception {
        return app(ExitApp.class).agent(agent("timeout=2s" + options)).env("NCCLEMU_HANG", "ncclCommDestroy,ncclCommAbort")
                .timeout(60);
    }

    @Test
    void aCallThatNeverReturnsLeavesTheLibrariesExitWorkItsChanceAndKeepsTheStatus() throws Exception {
        Exit exit = exitOf(trulyHung(""), "ready", "exit-while-destroying");
        Output r = exit.result();
        assertEquals(3, r.exitCode(), r.describe());
        assertTrue(r.stderr().contains(NEVER_RETURNED), r.describe());
        assertTrue(exit.millis() < 2_000 + WRITE_MARGIN_MILLIS + EXIT_HANDLERS_MILLIS + OUTSIDE_THE_HOOK_MILLIS,
                exit.millis() + " ms: " + r.describe());
        // exit(3) ran the emulator's exit work, which lists the communicator still alive inside it
        assertFalse(alive("comm").isEmpty(), r.describe());
        assertFalse(r.stderr().contains(WATCHDOG_FIRED), "exit(3) ended the process, not the watchdog: " + r.describe());
    }

    @Test
    void exitHandlersThatWaitForTheHungCallAreEndedByTheWatchdogWithTheStatus() throws Exception {
        // NCCLEMU_EXIT_WAITS: like a real library's teardown, the emulator's exit work waits for the stuck calls
        Exit exit = exitOf(trulyHung("").env("NCCLEMU_EXIT_WAITS", "1"), "ready", "exit-while-destroying");
        Output r = exit.result();
        assertEquals(3, r.exitCode(), r.describe());
        assertTrue(exit.millis() < 2_000 + WRITE_MARGIN_MILLIS + EXIT_HANDLERS_MILLIS + OUTSIDE_THE_HOOK_MILLIS,
                exit.millis() + " ms: " + r.describe());
        assertTrue(r.stderr().contains(WATCHDOG_FIRED + " " + EXIT_HANDLERS_MILLIS + " ms; _exit(3)"), r.describe());
    }

    @Test
    void withoutTheNativePartACallThatNeverReturnsEndsTheProcessWithUnderscoreExitAtOnce() throws Exception {
        Output r = trulyHung(",native=off,nccl-profiler=off").run("exit-while-destroying");
        assertEquals(3, r.exitCode(), r.describe());
        assertTrue(r.stderr().contains("ending the process with _exit(3) so that the libraries' exit handlers cannot hang it"),
                r.describe());
        assertEquals(List.of(), files("alive-"), "_exit skipped the emulator's exit work: " + r.describe());
    }

    @Test
    void aCleanExitUnderTheNativePartNeverArmsTheWatchdog() throws Exception {
        Output r = app(ExitApp.class).agent(agent("timeout=2s")).timeout(60).run("exit-from-thread");
        assertEquals(3, r.exitCode(), r.describe());
        assertFalse(r.stderr().contains(NEVER_RETURNED), r.describe());
        assertFalse(r.stderr().contains(WATCHDOG_FIRED), r.describe());
        // everything was released by cleanup, and exit(3) ran the emulator's exit work
        assertEquals(List.of(), alive("comm"), r.describe());
    }

    @Test
    void twoHundredThousandEventsWithAShortTimeoutNeverClaimACallHung() throws Exception {
        Output r = app(ManyEventsApp.class).agent(agent("timeout=500ms")).jvmArg("-Xmx1g").timeout(180)
                .run("200000", "legacy");
        assertEquals(0, r.exitCode(), r.describe());
        assertFalse(r.stderr().contains(NEVER_RETURNED), r.describe());
        // _exit was not taken: the emulator's own exit work ran and wrote its report
        assertEquals(1, files("alive-").size(), r.describe());
    }

    /** What a child did from its "exiting" (or "ready") line to its end. */
    private record Exit(Output result, long millis) {
    }

    private static Exit exitOf(ChildJvm child, String line, String... args) throws Exception {
        ChildJvm.Running running = child.start(args);
        running.awaitStdoutLine(line);
        long from = System.nanoTime();
        Output r = running.finish();
        return new Exit(r, (System.nanoTime() - from) / 1_000_000);
    }

    @Test
    void twoHundredThousandEventsWithAShortTimeoutExitWithinTheBoundWithTheReportWholeOrAbsent() throws Exception {
        Exit exit = exitOf(app(ManyEventsApp.class).agent(agent("timeout=500ms,exit-code=9")).jvmArg("-Xmx1g").timeout(180),
                "exiting", "200000", "legacy");
        Output r = exit.result();
        assertTrue(exit.millis() < 500 + WRITE_MARGIN_MILLIS + OUTSIDE_THE_HOOK_MILLIS, exit.millis() + " ms: " + r.describe());
        assertEquals(9, r.exitCode(), "the leaks fail the run, and so does a lost report: " + r.describe());
        List<Path> reports = files("report-");
        if (reports.isEmpty()) {
            assertTrue(r.stderr().lines().anyMatch(l -> l.startsWith("ncclguard: the report to ")
                    && l.contains("was not written") && l.contains("raise timeout=")), r.describe());
        } else {
            assertEquals(200_000, ReportJson.leaks(ReportJson.read(reports.get(0)), "event").size(), r.describe());
        }
        assertEquals(List.of(), files(".report-"), "no temporary file left behind");
    }

    @Test
    void aReportToAFifoNobodyReadsIsGivenUpAtTheBoundAndFailsTheRun() throws Exception {
        Path fifo = dir.resolve("report.fifo");
        Process mkfifo = new ProcessBuilder("mkfifo", fifo.toString()).inheritIO().start();
        assertEquals(0, mkfifo.waitFor(), "mkfifo " + fifo);
        Exit exit = exitOf(app(ExitApp.class).agent("action=report,text=none,timeout=500ms,exit-code=7,report=" + fifo)
                .timeout(60), "ready", "return");
        Output r = exit.result();
        assertEquals(7, r.exitCode(), r.describe());
        assertTrue(exit.millis() < 500 + WRITE_MARGIN_MILLIS + OUTSIDE_THE_HOOK_MILLIS, exit.millis() + " ms: " + r.describe());
        List<String> lines = r.stderr().lines().filter(l -> l.contains("report.fifo")).toList();
        assertEquals(1, lines.size(), r.describe());
        assertTrue(lines.get(0).startsWith("ncclguard: the report to " + fifo + " was not written")
                && lines.get(0).contains("timeout=500ms") && lines.get(0).contains("raise timeout="), lines.get(0));
    }

    @Test
    void completeEventsWithAShortTimeoutAreNeverCalledPending() throws Exception {
        // 20,000 and 100 ms rather than 200,000 and 500 ms: the deadline still cuts cleanup short,
        // and the report (10 MB, not 100) is written within its 2 s margin on a loaded machine too,
        // where 200,000 leaks' report is given up (twoHundredThousandEvents...WholeOrAbsent)
        Output r = app(ManyEventsApp.class).agent(agent("timeout=100ms")).jvmArg("-Xmx1g").timeout(180)
                .run("20000", "created");
        assertEquals(0, r.exitCode(), r.describe());
        List<Path> reports = files("report-");
        assertEquals(1, reports.size(), r.describe());
        List<JsonNode> events = ReportJson.leaks(ReportJson.read(reports.get(0)), "event");
        assertEquals(20_000, events.size(), r.describe());
        for (JsonNode event : events) {
            // their stream was synchronized: each is complete, whether cleanup got to destroy it or not
            assertFalse(event.path("cleanupNote").asText().contains("still pending"), event.toString());
            assertFalse(event.path("details").path("stillPending").asBoolean(false), event.toString());
        }
    }
}
