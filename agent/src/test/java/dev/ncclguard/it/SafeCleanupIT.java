package dev.ncclguard.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.ncclguard.it.apps.ExitApp;
import dev.ncclguard.testkit.ChildJvm;
import dev.ncclguard.testkit.Output;
import dev.ncclguard.testkit.ReportJson;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * action=cleanup in child JVMs on the emulator: ranks in separate JVMs whose exit-time NCCL warnings
 * it removes, cleanup that never outlives its timeout, never releases what the application
 * releases, and runs on every exit path that runs the JVM's shutdown hooks.
 */
class SafeCleanupIT {
    /** Generous: a JVM start, the 2-3 s cleanup bound, and a slow machine. Without the bound, these runs never end. */
    private static final long EXIT_BOUND_MILLIS = 20_000;
    private static final String WARN = "NCCL WARN";
    private static final String MISUSE = "is not a live communicator";

    @TempDir
    Path dir;

    private String agent(String options) {
        return "action=cleanup,text=none,report=" + dir.resolve("report-%p.json") + (options.isEmpty() ? "" : "," + options);
    }

    private ChildJvm app() throws Exception {
        return ChildJvm.sample().mainClass(AgentSafetyIT.testClasspath(), ExitApp.class.getName())
                .env("NCCLEMU_REPORT", dir.resolve("alive-%p.txt").toString());
    }

    private ChildJvm multiRank() {
        return ChildJvm.sample().env("NCCLEMU_REPORT", dir.resolve("alive-%p.txt").toString());
    }

    private List<Path> files(String prefix) throws Exception {
        try (Stream<Path> s = Files.list(dir)) {
            return s.filter(p -> p.getFileName().toString().startsWith(prefix)).sorted().toList();
        }
    }

    /** The JSON reports of JVMs that used NCCL (a multi-rank launcher writes one with no calls). */
    private List<JsonNode> reportsWithComms() throws Exception {
        List<JsonNode> reports = new ArrayList<>();
        for (Path p : files("report-")) {
            JsonNode r = ReportJson.read(p);
            if (ReportJson.summary(r, "commsCreated") > 0) {
                reports.add(r);
            }
        }
        return reports;
    }

    private List<String> aliveCommsAndEvents() throws Exception {
        List<String> alive = new ArrayList<>();
        for (Path p : files("alive-")) {
            for (String line : Files.readAllLines(p)) {
                if (line.startsWith("comm ") || line.startsWith("event ")) {
                    alive.add(line);
                }
            }
        }
        return alive;
    }

    private static void assertCommsCleaned(JsonNode report, String outcome, String describe) {
        List<JsonNode> comms = ReportJson.leaks(report, "comm");
        assertFalse(comms.isEmpty(), describe);
        for (JsonNode comm : comms) {
            assertEquals(outcome, comm.path("cleanup").asText(), comm + "\n" + describe);
        }
    }

    // ---- ranks in separate JVMs ----

    @Test
    void leakyRanksWithoutTheAgentWarnAboutEachOther() throws Exception {
        Output r = multiRank().run("multi-rank", "--ranks", "2");
        assertEquals(0, r.exitCode(), r.describe());
        assertTrue(r.stderr().contains(WARN + " [Service thread] Connection closed by localRank"), r.describe());
        assertTrue(r.stderr().matches("(?s).*" + WARN + " \\[Proxy Service \\d\\] Failed to execute operation Close from rank \\d.*"),
                r.describe());
        assertEquals(2, aliveCommsAndEvents().stream().filter(l -> l.startsWith("comm ")).count(), r.describe());
    }

    @Test
    void withCleanupNoRankWarnsEveryRankExits0AndNothingIsLeftAlive() throws Exception {
        Output r = multiRank().agent(agent("")).run("multi-rank", "--ranks", "2");
        assertEquals(0, r.exitCode(), r.describe());
        assertTrue(r.stdout().matches("(?s).*rank 0 \\(pid \\d+\\) exited 0.*rank 1 \\(pid \\d+\\) exited 0.*"), r.describe());
        assertFalse(r.stderr().contains(WARN), r.describe());
        List<JsonNode> reports = reportsWithComms();
        assertEquals(2, reports.size(), r.describe());
        for (JsonNode report : reports) {
            assertCommsCleaned(report, "destroyed", r.describe());
        }
        assertEquals(List.of(), aliveCommsAndEvents(), r.describe());
    }

    @Test
    void aPeerKilledWithSigkillLeavesTheSurvivorsCleanupWithinItsBound() throws Exception {
        Output r = multiRank().agent(agent("timeout=2s")).run("multi-rank", "--ranks", "2", "--kill", "1");
        assertEquals(0, r.exitCode(), r.describe());
        Matcher exit = Pattern.compile("rank 0 \\(pid \\d+\\) exited 0, (\\d+) ms after it was told to exit").matcher(r.stdout());
        assertTrue(exit.find(), r.describe());
        assertTrue(Long.parseLong(exit.group(1)) < EXIT_BOUND_MILLIS, r.describe());
        List<JsonNode> reports = reportsWithComms();
        assertEquals(1, reports.size(), "only the survivor ran its exit hook\n" + r.describe());
        JsonNode comm = ReportJson.leaks(reports.get(0), "comm").get(0);
        // its peer never comes to the destroy: the destroy waits for it, then the abort ends it
        assertEquals("aborted", comm.path("cleanup").asText(), comm.toString());
        assertTrue(comm.path("cleanupNote").asText().startsWith("ncclCommDestroy did not return within"), comm.toString());
    }

    // ---- bounded, whatever the library does ----

    @Test
    void aDestroyThatHangsIsAbortedAndTheJvmExitsOnTime() throws Exception {
        Output r = app().agent(agent("timeout=2s")).env("NCCLEMU_HANG", "ncclCommDestroy").run("return");
        assertEquals(0, r.exitCode(), r.describe());
        assertTrue(r.millis() < EXIT_BOUND_MILLIS, r.describe());
        assertCommsCleaned(ReportJson.read(files("report-").get(0)), "aborted", r.describe());
        assertEquals(List.of(), aliveCommsAndEvents(), r.describe());
    }

    @Test
    void communicatorsSharingADeviceAreAbortedTogether() throws Exception {
        Output r = app().agent(agent("timeout=2s")).env("NCCLEMU_HANG", "ncclCommDestroy").run("one-device");
        assertEquals(0, r.exitCode(), r.describe());
        JsonNode report = ReportJson.read(files("report-").get(0));
        assertCommsCleaned(report, "aborted", r.describe());
        for (JsonNode comm : ReportJson.leaks(report, "comm")) {
            assertEquals(0, comm.path("details").path("device").asInt(), comm.toString());
        }
        assertEquals(List.of(), aliveCommsAndEvents(), r.describe());
    }

    @Test
    void whenEvenTheAbortHangsTheProcessEndsOnTimeAfterItsReport() throws Exception {
        // NCCLEMU_EXIT_WAITS: like a real library's teardown, exit(3) waits for the stuck calls
        Output r = app().agent(agent("timeout=2s")).env("NCCLEMU_HANG", "ncclCommDestroy,ncclCommAbort")
                .env("NCCLEMU_EXIT_WAITS", "1").timeout(60).run("return");
        assertEquals(0, r.exitCode(), r.describe());
        assertTrue(r.millis() < EXIT_BOUND_MILLIS, r.describe());
        assertTrue(r.stderr().contains("ncclguard: a call into NCCL or CUDA never returned; ending the process with _exit(0)"),
                r.describe());
        JsonNode report = ReportJson.read(files("report-").get(0));
        assertCommsCleaned(report, "timed-out", r.describe());
        assertTrue(ReportJson.summary(report, "cleanupFailed") >= 2, report.toString());
    }

    // ---- never a second release ----

    @Test
    void whatTheApplicationReleasesDuringTheExitIsNeverReleasedAgain() throws Exception {
        Output r = app().agent(agent("timeout=3s")).env("NCCLEMU_HANG", "ncclCommDestroy")
                .run("release-during-exit");
        assertEquals(0, r.exitCode(), r.describe());
        assertFalse(r.stderr().contains(MISUSE), r.describe());
        // the application's late destroy met the agent's claim and never reached the library
        assertFalse(r.stdout().contains("destroy of comm 1 returned"), r.describe());
        JsonNode report = ReportJson.read(files("report-").get(0));
        List<JsonNode> comms = ReportJson.leaks(report, "comm");
        assertEquals(2, comms.size(), report.toString());
        JsonNode mine = comms.stream().filter(c -> c.path("details").path("rank").asInt() == 0).findFirst().orElseThrow();
        JsonNode agents = comms.stream().filter(c -> c.path("details").path("rank").asInt() == 1).findFirst().orElseThrow();
        // its destroy hangs (NCCLEMU_HANG): still inside the library, so aborted, never "released"
        assertEquals("aborted", mine.path("cleanup").asText(), mine.toString());
        assertTrue(mine.path("cleanupNote").asText().startsWith("the application's own release"), mine.toString());
        assertEquals("aborted", agents.path("cleanup").asText(), agents.toString());
    }

    // ---- every exit that runs the shutdown hooks ----

    private void assertCleanedUp(Output r, int status) throws Exception {
        assertEquals(status, r.exitCode(), r.describe());
        assertCommsCleaned(ReportJson.read(files("report-").get(0)), "destroyed", r.describe());
        assertEquals(List.of(), aliveCommsAndEvents(), r.describe());
    }

    @Test
    void mainReturns() throws Exception {
        assertCleanedUp(app().agent(agent("")).run("return"), 0);
    }

    @Test
    void systemExitFromAnotherThread() throws Exception {
        assertCleanedUp(app().agent(agent("")).run("exit-from-thread"), 3);
    }

    @Test
    void uncaughtExceptionInMain() throws Exception {
        Output r = app().agent(agent("")).run("throw");
        assertTrue(r.stderr().contains("IllegalStateException: the application failed"), r.describe());
        assertCleanedUp(r, 1);
    }

    @Test
    void sigterm() throws Exception {
        ChildJvm.Running running = app().agent(agent("")).start("wait");
        running.awaitStdoutLine("ready");
        running.signal("TERM");
        assertCleanedUp(running.finish(), 143);
    }

    @Test
    void sigint() throws Exception {
        ChildJvm.Running running = app().agent(agent("")).start("wait");
        running.awaitStdoutLine("ready");
        running.signal("INT");
        assertCleanedUp(running.finish(), 130);
    }
}
