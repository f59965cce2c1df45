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
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * NCCL's profiler plugin (libncclguard.so, option nccl-profiler), loaded by the emulated NCCL as
 * NCCL 2.28 loads it: communicators only NCCL sees (NCCL linked into the runtime's library), NCCL's
 * own commId, work in flight at exit, and the application's own plugin loaded behind ours.
 */
class NcclProfilerIT {
    static final String CANNOT_RELEASE = "ncclguard cannot release it: it saw this communicator only through NCCL's"
            + " profiler plugin";
    /** The emulator's logging test plugin (the emulator's profiler_testlog.c). */
    static final Path TESTLOG = ChildJvm.EMU.resolveSibling("emu-test").resolve("libnccl-profiler-testlog.so");
    private static final Pattern INIT_COMPLETE = Pattern.compile("commId 0x([0-9a-f]+) - Init COMPLETE");

    @TempDir
    Path dir;

    @Test
    void nccLinkedIntoTheRuntimeIsSeenByItsPluginWithTheJavaFrameAndTheCannotReleaseLine() throws Exception {
        Path report = dir.resolve("static.json");
        Output r = ChildJvm.sample().agent("report=" + report).run("ep-static-leaky");
        assertEquals(0, r.exitCode(), r.describe());
        JsonNode json = ReportJson.read(report);
        List<JsonNode> comms = ReportJson.leaks(json, "comm");
        assertEquals(2, comms.size(), json.toString());
        Set<Integer> ranks = new TreeSet<>();
        for (JsonNode comm : comms) {
            assertEquals("nccl-profiler", comm.path("bridge").asText(), comm.toString());
            assertEquals("dev.ncclguard.samples.ep.EpStaticRuntime.open(Native Method)", comm.path("stack").path(0).asText());
            assertEquals(2, comm.path("details").path("nranks").asInt());
            assertEquals(1, comm.path("details").path("nNodes").asInt());
            assertTrue(comm.path("details").path("commId").asText().matches("[0-9a-f]{16}"), comm.toString());
            assertTrue(comm.path("note").asText().startsWith(CANNOT_RELEASE), comm.toString());
            ranks.add(comm.path("details").path("rank").asInt());
        }
        assertEquals(Set.of(0, 1), ranks);
        assertEquals(2, ReportJson.summary(json, "commsCreated"));
        assertTrue(r.stderr().contains(CANNOT_RELEASE), r.describe());
        // its CUDA runtime is libcudart.so.13, by soname: the interposer sees its stream and event
        assertEquals(2, ReportJson.leaks(json, "event").size(), json.toString());
    }

    @Test
    void aCleanRunOfTheRuntimeWithNcclInsideReportsNothing() throws Exception {
        Path report = dir.resolve("static-clean.json");
        Output r = ChildJvm.sample().agent("report=" + report).run("ep-static-clean");
        assertEquals(0, r.exitCode(), r.describe());
        JsonNode json = ReportJson.read(report);
        assertEquals(0, json.path("leaks").size(), json.toString());
        assertEquals(2, ReportJson.summary(json, "commsCreated"));
        assertEquals(2, ReportJson.summary(json, "commsReleased"));
    }

    @Test
    void withTheInterposerOffThePluginStillSeesTheRuntimesCommunicators() throws Exception {
        Path report = dir.resolve("plugin-only.json");
        Output r = ChildJvm.sample().agent("native=off,report=" + report).run("ep-leaky");
        assertEquals(0, r.exitCode(), r.describe());
        JsonNode json = ReportJson.read(report);
        List<JsonNode> comms = ReportJson.leaks(json, "comm");
        assertEquals(2, comms.size(), json.toString());
        for (JsonNode comm : comms) {
            assertEquals("nccl-profiler", comm.path("bridge").asText(), comm.toString());
        }
        assertEquals(0, ReportJson.leaks(json, "event").size(), "events made in C need the interposer: " + json);
    }

    @Test
    void aCommunicatorSeenByABridgeAndThePluginIsOneRecord() throws Exception {
        Path report = dir.resolve("both.json");
        Output r = ChildJvm.sample().agent("report=" + report).run("ep-leaky");
        assertEquals(0, r.exitCode(), r.describe());
        JsonNode json = ReportJson.read(report);
        assertEquals(2, ReportJson.summary(json, "commsCreated"), json.toString());
        for (JsonNode comm : ReportJson.leaks(json, "comm")) {
            assertEquals("native", comm.path("bridge").asText(), comm.toString());
        }
        assertEquals(2, json.path("communicators").size(), json.toString());
    }

    @Test
    void theReportsCommIdIsTheOneNcclPrintsInItsInitCompleteLine() throws Exception {
        for (String scenario : List.of("ep-leaky", "ep-static-leaky", "leaky")) {
            Path report = dir.resolve(scenario + "-ids.json");
            Output r = ChildJvm.sample().agent("text=none,report=" + report).env("NCCL_DEBUG", "INFO")
                    .run(scenario);
            assertEquals(0, r.exitCode(), r.describe());
            Set<String> printed = new TreeSet<>();
            Matcher m = INIT_COMPLETE.matcher(r.stdout() + r.stderr());
            while (m.find()) {
                printed.add(String.format("%16s", m.group(1)).replace(' ', '0'));
            }
            assertEquals(1, printed.size(), "one communicator of two ranks: " + r.describe());
            Set<String> reported = ReportJson.leaks(ReportJson.read(report), "comm").stream()
                    .map(c -> c.path("details").path("commId").asText()).collect(Collectors.toCollection(TreeSet::new));
            assertEquals(printed, reported, scenario);
        }
    }

    @Test
    void theApplicationsOwnPluginGetsEveryInitEventAndFinalizeItGotWithoutTheAgent() throws Exception {
        assertTrue(Files.isRegularFile(TESTLOG), "no test plugin at " + TESTLOG);
        List<String> without = pluginLog("without", null);
        List<String> with = pluginLog("with", "text=none");
        assertTrue(without.stream().anyMatch(l -> l.startsWith("init ")), without.toString());
        assertTrue(without.stream().anyMatch(l -> l.startsWith("start type=Coll ")), without.toString());
        assertTrue(without.stream().anyMatch(l -> l.startsWith("finalize")), without.toString());
        assertEquals(without, with);
    }

    /** The test plugin's log of a clean two-rank run, its lines sorted and its thread, handle and address values left out. */
    private List<String> pluginLog(String name, String agent) throws Exception {
        Path log = dir.resolve(name + ".log");
        ChildJvm child = ChildJvm.sample().env("NCCL_PROFILER_PLUGIN", TESTLOG.toString())
                .env("NCCLEMU_TESTLOG", log.toString());
        if (agent != null) {
            child.agent(agent);
        }
        Output r = child.run("ep-clean");
        assertEquals(0, r.exitCode(), r.describe());
        // the mask an init finds is NCCL's process-wide one as the other rank's init may have set
        // it already: the two ranks init at once, so it is 0x0 or the plugin's own, with or without
        // the agent, and left out (the mask the plugin sets is in its "init v6 mask=" line)
        return Files.readAllLines(log).stream()
                .map(l -> l.replaceAll(" (tid|context|handle|parent|parentGroup|commId|send|recv|buff|pTimer|pid|stream|mask_in)=\\S*", ""))
                .sorted().collect(Collectors.toList());
    }

    @Test
    void profilerPluginNoneIsRespectedAndSaysWhatIsNotSeen() throws Exception {
        Path report = dir.resolve("none.json");
        Output r = ChildJvm.sample().agent("report=" + report).env("NCCL_PROFILER_PLUGIN", "none")
                .run("ep-static-leaky");
        assertEquals(0, r.exitCode(), r.describe());
        List<String> lines = r.stderr().lines().filter(l -> l.contains("NCCL_PROFILER_PLUGIN=none")).toList();
        assertEquals(1, lines.size(), r.describe());
        assertTrue(lines.get(0).contains("does not see communicators of an NCCL linked into a native library"), lines.get(0));
        assertEquals(0, ReportJson.leaks(ReportJson.read(report), "comm").size(), r.describe());
    }

    @Test
    void workStillInFlightAtExitIsReportedOnItsCommunicator() throws Exception {
        Path report = dir.resolve("inflight.json");
        Output r = ChildJvm.sample().agent("report=" + report).env("NCCLEMU_OP_DELAY_US", "1000000")
                .run("ep-inflight", "--iters", "2");
        assertEquals(0, r.exitCode(), r.describe());
        List<JsonNode> comms = ReportJson.leaks(ReportJson.read(report), "comm");
        assertEquals(2, comms.size(), r.describe());
        for (JsonNode comm : comms) {
            JsonNode inFlight = comm.path("details").path("inFlight");
            assertEquals(2, inFlight.path("operations").asInt(), comm.toString());
            assertEquals(2, inFlight.path("collectives").asInt(), comm.toString());
            assertEquals("AllReduce", inFlight.path("oldest").path("function").asText(), comm.toString());
            assertEquals(1024, inFlight.path("oldest").path("elements").asInt(), comm.toString());
            assertTrue(inFlight.path("oldest").path("ageMs").asLong() < 1000, comm.toString());
        }
        assertTrue(r.stderr().contains("2 operations in flight, the oldest AllReduce of 1024"), r.describe());
    }

    @Test
    void theMBeansNcclOpsInFlightCountsWhatThePluginSeesInFlightOnEveryCommunicator() throws Exception {
        Output r = ChildJvm.sample().agent("text=none").env("NCCLEMU_OP_DELAY_US", "3000000")
                .run("ep-inflight", "--iters", "2");
        assertEquals(0, r.exitCode(), r.describe());
        // two ranks, each with its two last allreduces still running behind a 3 s delay
        assertTrue(r.stdout().contains("NCCL operations in flight now (the agent's MBean): 4.0"), r.describe());
    }

    @Test
    void cleanupWaitsForWorkInFlightThenDestroys() throws Exception {
        Path report = dir.resolve("inflight-cleanup.json");
        Path alive = dir.resolve("alive.txt");
        Output r = ChildJvm.sample().agent("action=cleanup,report=" + report)
                .env("NCCLEMU_OP_DELAY_US", "1000000").env("NCCLEMU_REPORT", alive.toString())
                .run("ep-inflight", "--iters", "2");
        assertEquals(0, r.exitCode(), r.describe());
        JsonNode json = ReportJson.read(report);
        for (JsonNode comm : ReportJson.leaks(json, "comm")) {
            assertEquals(2, comm.path("details").path("inFlight").path("operations").asInt(), comm.toString());
            assertEquals("destroyed", comm.path("cleanup").asText(), comm.toString());
        }
        assertEquals(0, ReportJson.summary(json, "cleanupFailed"), json.toString());
        List<String> left = ReportJson.aliveAtExit(alive);
        assertTrue(left.stream().allMatch(l -> l.startsWith("stream ") && l.endsWith(" pending 0")),
                "the work finished and the communicators went: " + left + "\n" + r.describe());
        assertFalse(r.stderr().contains("timed-out"), r.describe());
    }
}
