package dev.ncclguard.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.ncclguard.testkit.ChildJvm;
import dev.ncclguard.testkit.Output;
import dev.ncclguard.testkit.ReportJson;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Each sample scenario in a child JVM under the agent, against the emulator. */
class SamplesUnderAgentIT {
    @TempDir
    Path dir;

    @Test
    void leakedCommunicatorsAreReportedWithTheirCreatingStack() throws Exception {
        Path report = dir.resolve("leaky.json");
        Output r = ChildJvm.sample().agent("report=" + report).run("leaky");
        assertEquals(0, r.exitCode(), r.describe());

        JsonNode json = ReportJson.read(report);
        List<JsonNode> comms = ReportJson.leaks(json, "comm");
        assertEquals(2, comms.size(), r.describe());
        assertEquals(2, ReportJson.summary(json, "leakedComms"));
        assertEquals(2, ReportJson.summary(json, "commsCreated"));
        assertEquals(0, ReportJson.summary(json, "commsReleased"));
        Set<Integer> ranks = new HashSet<>();
        Set<String> commIds = new HashSet<>();
        for (JsonNode comm : comms) {
            assertEquals("ncclCommInitRank", comm.path("api").asText());
            assertEquals("jna-interface", comm.path("bridge").asText());
            assertTrue(comm.path("handle").asText().matches("0x[0-9a-f]+"), comm.toString());
            assertEquals(2, comm.path("details").path("nranks").asInt());
            ranks.add(comm.path("details").path("rank").asInt());
            commIds.add(comm.path("details").path("commId").asText());
            String top = comm.path("stack").path(0).asText();
            assertTrue(top.startsWith("dev.ncclguard.samples."), "first frame is the application's: " + comm);
            for (JsonNode frame : comm.path("stack")) {
                String f = frame.asText();
                assertFalse(f.startsWith("com.sun.jna.") || f.startsWith("dev.ncclguard.agent")
                        || f.startsWith("jdk.proxy") || f.contains("$Proxy"), "agent/JNA frame in " + comm);
            }
            assertEquals("none", comm.path("cleanup").asText());
        }
        assertEquals(Set.of(0, 1), ranks);
        assertEquals(1, commIds.size(), "both ranks of one communicator share its commId: " + commIds);

        assertTrue(ReportJson.summary(json, "pendingEvents") >= 2, json.toString());
        assertTrue(ReportJson.summary(json, "unsyncedStreams") >= 2, json.toString());
        assertTrue(r.stderr().lines().anyMatch(l -> l.startsWith("SUMMARY: ncclguard:")), r.describe());
    }

    @Test
    void workStillRunningAtExitIsReportedAsStillPending() throws Exception {
        Path report = dir.resolve("pending.json");
        Output r = ChildJvm.sample().agent("report=" + report)
                .env("NCCLEMU_OP_DELAY_US", "3000000").run("pending");
        assertEquals(0, r.exitCode(), r.describe());
        JsonNode json = ReportJson.read(report);
        List<JsonNode> events = ReportJson.leaks(json, "event");
        assertFalse(events.isEmpty(), json.toString());
        for (JsonNode event : events) {
            assertTrue(event.path("details").path("stillPending").asBoolean(), event.toString());
        }
    }

    @Test
    void cleanupReleasesEverythingTheApplicationLeaked() throws Exception {
        Path report = dir.resolve("cleanup.json");
        Path alive = dir.resolve("alive.txt");
        Output r = ChildJvm.sample().agent("action=cleanup,report=" + report)
                .env("NCCLEMU_REPORT", alive.toString()).run("leaky");
        assertEquals(0, r.exitCode(), r.describe());
        JsonNode json = ReportJson.read(report);
        assertEquals("cleanup", json.path("action").asText());
        for (JsonNode comm : ReportJson.leaks(json, "comm")) {
            assertEquals("destroyed", comm.path("cleanup").asText(), comm.toString());
        }
        assertEquals(ReportJson.leaks(json, "comm").size() + ReportJson.leaks(json, "event").size(),
                ReportJson.summary(json, "cleaned") - ReportJson.leaks(json, "stream").size(), json.toString());
        assertEquals(0, ReportJson.summary(json, "cleanupFailed"));
        List<String> left = ReportJson.aliveAtExit(alive);
        assertTrue(left.stream().noneMatch(l -> l.startsWith("comm") || l.startsWith("event")),
                "still alive after cleanup: " + left + "\n" + r.describe());
    }

    @Test
    void exitCodeIsUsedWhenLeaksWereFound() throws Exception {
        Output r = ChildJvm.sample().agent("exit-code=3,text=none").run("leaky");
        assertEquals(3, r.exitCode(), r.describe());
    }

    @Test
    void textReportCanGoToAFileAndReportPathExpandsPid() throws Exception {
        Path text = dir.resolve("leaks.txt");
        Output r = ChildJvm.sample()
                .agent("text=" + text + ",report=" + dir.resolve("r-%p.json")).run("leaky");
        assertEquals(0, r.exitCode(), r.describe());
        String body = Files.readString(text);
        assertTrue(body.contains("ncclCommInitRank"), body);
        assertTrue(body.lines().reduce((a, b) -> b).orElse("").startsWith("SUMMARY: ncclguard:"), body);
        try (var files = Files.list(dir)) {
            assertTrue(files.anyMatch(p -> p.getFileName().toString().matches("r-\\d+\\.json")),
                    "report with the pid in its name");
        }
        assertFalse(r.stderr().contains("SUMMARY: ncclguard:"), r.describe());
    }

    /** log-level=debug: what the agent loaded and instrumented, the native part, each tracked creation. */
    @Test
    void logLevelDebugSaysWhatTheAgentLoadedInstrumentedAndTracks() throws Exception {
        Output r = ChildJvm.sample().agent("text=none,log-level=debug").run("leaky");
        List<String> debug = r.stderr().lines().filter(l -> l.startsWith("ncclguard: debug: ")).toList();
        assertTrue(debug.stream().anyMatch(l -> l.startsWith("ncclguard: debug: loaded ncclguard ") && l.contains("(premain)")),
                r.describe());
        assertTrue(debug.stream().anyMatch(l -> l.startsWith("ncclguard: debug: options: ") && l.contains("log-level=debug")
                && l.contains("text=argument")), r.describe());
        assertTrue(debug.stream().anyMatch(l -> l.contains("(com.sun.jna.Function)")), "what it instrumented: " + r.describe());
        assertTrue(debug.stream().anyMatch(l -> l.contains("calls made in native code")), "the native part: " + r.describe());
        assertTrue(debug.stream().anyMatch(l -> l.matches("ncclguard: debug: tracking communicator 0x\\p{XDigit}+ \\(rank 0 of 2.*"
                + "ncclCommInitRank through jna-interface.*")), r.describe());

        Output quiet = ChildJvm.sample().agent("text=none").run("leaky");
        assertFalse(quiet.stderr().contains("ncclguard: debug:"), "the default level prints none: " + quiet.describe());
    }
}
