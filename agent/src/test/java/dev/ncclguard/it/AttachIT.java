package dev.ncclguard.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.ncclguard.control.FakeRas;
import dev.ncclguard.testkit.ChildJvm;
import dev.ncclguard.testkit.LiveChild;
import dev.ncclguard.testkit.Output;
import dev.ncclguard.testkit.ReportJson;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The attach and dump commands against a running sample (the serve scenario, started without the
 * agent), as a user runs them: {@code java -jar ncclguard-agent.jar attach|dump <pid> ...}.
 */
class AttachIT {
    static final String JAVA_17 = System.getProperty("java.home");
    static final Path JDK_25 = Path.of("/usr/lib/jvm/temurin-25-jdk-amd64");
    private static final String DYNAMIC_AGENT_WARNING = "WARNING: A Java agent has been loaded dynamically";

    @TempDir
    Path dir;

    /** One run of the agent jar's command line, on {@code javaHome}'s java. */
    static Output cli(String javaHome, String... args) throws Exception {
        return ChildJvm.agentCli().javaHome(javaHome).timeout(60).run(args);
    }

    private static JsonNode parse(String json) throws Exception {
        JsonNode report = ReportJson.parse(json, "of dump --json");
        assertEquals("ncclguard-report/1", report.path("schema").asText(), json);
        return report;
    }

    /** The communicator leaks whose creating stack passes through {@code frame}. */
    private static List<JsonNode> comms(JsonNode report, String frame) {
        List<JsonNode> out = new ArrayList<>();
        for (JsonNode leak : ReportJson.leaks(report, "comm")) {
            if (leak.path("stack").toString().contains(frame)) {
                out.add(leak);
            }
        }
        return out;
    }

    @Test
    void attachToARunningSampleThenLeakDumpChangeOptionsAndExit() throws Exception {
        Path report = dir.resolve("attached-%p.json");
        Path recording = dir.resolve("serve.jfr");
        try (FakeRas ras = new FakeRas(null, FakeRas.text());
             LiveChild app = LiveChild.serve(JAVA_17, List.of("-XX:StartFlightRecording:filename=" + recording),
                     Map.of("NCCL_RAS_ADDR", ras.address()))) {
            String pid = Long.toString(app.pid());

            Output attach = cli(JAVA_17, "attach", pid, "report=" + report);
            assertEquals(0, attach.exitCode(), attach.describe());
            assertTrue(attach.stdout().startsWith("ncclguard: attached to pid " + pid), attach.describe());
            // JNA was loaded long before: its Function class is retransformed in place
            assertTrue(attach.stdout().contains("(com.sun.jna.Function): already loaded, retransformed"),
                    attach.describe());
            assertTrue(attach.stdout().contains("RAS (" + ras.address() + ") knew of 4 communicators"),
                    attach.describe());
            assertEquals("", attach.stderr(), "Java 17 does not warn of an attached agent: " + attach.describe());

            app.send("leak");
            app.await("serve: leaked");
            Output dump = cli(JAVA_17, "dump", pid, "--json");
            assertEquals(0, dump.exitCode(), dump.describe());
            JsonNode live = parse(dump.stdout());
            assertTrue(live.path("live").asBoolean(), dump.stdout());
            assertTrue(live.has("attachedAt"), dump.stdout());
            assertEquals(4, live.path("beforeAttach").path("communicators").asInt(), dump.stdout());
            // the leak made after the attach, with the application's creating stack; the
            // communicators the ranks joined before the attach are unknown to it
            assertEquals(2, comms(live, "Serve.leakCommunicatorAndEvent").size(), dump.stdout());
            assertEquals(2, ReportJson.leaks(live, "comm").size(), dump.stdout());
            assertTrue(app.alive(), "a dump does not stop the application");

            Output again = cli(JAVA_17, "attach", pid, "action=cleanup");
            assertEquals(0, again.exitCode(), again.describe());
            assertTrue(again.stdout().contains("already running") && again.stdout().contains("action=cleanup")
                    && again.stdout().contains("report=" + report), again.describe());

            assertEquals(0, app.stop(), app.describe());
            JsonNode exit = ReportJson.read(Path.of(report.toString().replace("%p", pid)));
            assertEquals("cleanup", exit.path("action").asText(), "the second attach's option is in effect");
            assertEquals(live.path("attachedAt").asText(), exit.path("attachedAt").asText());
            List<JsonNode> leaked = comms(exit, "Serve.leakCommunicatorAndEvent");
            assertEquals(2, leaked.size(), exit.toString());
            for (JsonNode comm : leaked) {
                assertEquals("destroyed", comm.path("cleanup").asText(), comm.toString());
            }
            assertEquals(2, ReportJson.leaks(exit, "event").size(), exit.toString());
            String err = app.stderr();
            assertTrue(err.contains("ncclguard: tracking since " + exit.path("attachedAt").asText()), err);
            assertFalse(err.contains("Exception"), err);

            // JFR was recording before the attach: its exit dump still waits for the exit report
            List<RecordedEvent> events = RecordingFile.readAllEvents(recording);
            assertEquals(exit.path("leaks").size(), events.stream()
                    .filter(e -> e.getEventType().getName().equals("dev.ncclguard.LeakFound")).count());
            assertEquals(2, events.stream().filter(e -> e.getEventType().getName().equals("dev.ncclguard.CleanupAction")
                    && e.getString("outcome").equals("destroyed")).count());
        }
    }

    /**
     * JNA direct-mapped and JNI native methods of classes loaded before the attach cannot be
     * wrapped: their call sites are rewritten, and the leak made after the attach is found with its
     * bridge, then released through the same native methods at exit.
     */
    @ParameterizedTest
    @CsvSource({"jna-direct, jna-direct, DirectGpu.commInitRank", "jni, jni, JniGpu.commInitRank",
        "jni-bindings, jni, JniGpu.commInitRank"})
    void nativeMethodsOfClassesLoadedBeforeTheAttachAreReachedThroughTheirCallSites(String bridge, String label,
            String commFrame) throws Exception {
        Path report = dir.resolve("native.json");
        String bindings = bridge.equals("jni-bindings") ? ",bindings=" + BridgesIT.BINDINGS : "";
        try (LiveChild app = LiveChild.serve(JAVA_17, List.of(), Map.of(), "--bridge", bridge)) {
            Output attach = cli(JAVA_17, "attach", Long.toString(app.pid()), "action=cleanup,report=" + report + bindings);
            assertEquals(0, attach.exitCode(), attach.describe());
            assertTrue(attach.stdout().matches("(?s).*native methods: \\d+ in \\d+ class(es)? loaded before the attach .*"
                    + "reached through [1-9]\\d* call sites? rewritten in [1-9]\\d* class.*"), attach.describe());
            app.send("leak");
            app.await("serve: leaked");
            assertEquals(0, app.stop(), app.describe());
        }
        JsonNode exit = ReportJson.read(report);
        List<JsonNode> comms = comms(exit, "Serve.leakCommunicatorAndEvent");
        assertEquals(2, comms.size(), exit.toString());
        for (JsonNode comm : comms) {
            assertEquals(label, comm.path("bridge").asText(), comm.toString());
            assertTrue(comm.path("stack").toString().contains(commFrame), comm.toString());
            assertEquals("destroyed", comm.path("cleanup").asText(), comm.toString());
        }
        assertEquals(2, ReportJson.leaks(exit, "event").size(), exit.toString());
        assertEquals(0, ReportJson.summary(exit, "cleanupFailed"), exit.toString());
    }

    /**
     * A DeepEP-style runtime (its C library links NCCL by soname) loaded and used before the attach:
     * its import slots are bound to NCCL by then (lazily at the first call, or at load with -z now,
     * read-only after with -z relro), so the promotion alone does not reach its calls; the attach
     * rewrites those slots (native-patch), and a communicator it makes in C afterwards is reported.
     */
    @ParameterizedTest
    @CsvSource({"libep_runtime.so, false", "libep_runtime_now.so, true"})
    void aCommunicatorMadeInCByALibraryUsedBeforeTheAttachIsReportedWithItsStack(String library, boolean bindNow)
            throws Exception {
        Path report = dir.resolve("ep.json");
        AttachedRun run = leakInCAfterAnAttach(bindNow, "report=" + report);
        JsonNode exit = ReportJson.read(report);
        List<JsonNode> comms = ReportJson.leaks(exit, "comm");
        assertEquals(1, comms.size(), exit.toString());
        JsonNode comm = comms.get(0);
        assertEquals("native", comm.path("bridge").asText(), comm.toString());
        assertEquals(library, comm.path("callerLibrary").asText(), comm.toString());
        assertEquals(NativeInterposerIT.OPEN, comm.path("stack").path(0).asText(), comm.toString());
        assertTrue(comm.path("stack").toString().contains("dev.ncclguard.samples.EpSample.leakRuntime("), comm.toString());
        // the communicator made and destroyed before the attach is unknown to the report
        assertEquals(1, ReportJson.summary(exit, "commsCreated"), exit.toString());
        String since = exit.path("attachedAt").asText();
        assertFalse(since.isEmpty(), exit.toString());
        assertTrue(run.stderr().contains("ncclguard: tracking since " + since), run.stderr());
        assertTrue(run.stderr().lines().anyMatch(l -> l.startsWith("SUMMARY: ncclguard: ")
                && l.contains("(partial: tracked since " + since + ", attached;")), run.stderr());
        assertTrue(run.stderr().contains("at " + NativeInterposerIT.OPEN), "the text report's stack: " + run.stderr());
    }

    @Test
    void withoutImportSlotPatchingTheCommunicatorOfALibraryUsedBeforeTheAttachIsMissed() throws Exception {
        Path report = dir.resolve("ep-unpatched.json");
        leakInCAfterAnAttach(false, "native-patch=off,report=" + report);
        JsonNode exit = ReportJson.read(report);
        for (JsonNode comm : ReportJson.leaks(exit, "comm")) {
            assertFalse(comm.path("bridge").asText().equals("native"), "its slots still name NCCL itself: " + comm);
        }
    }

    private record AttachedRun(String stderr) {
    }

    /** ep-serve: the runtime used once, the attach, a runtime leaked in C, the exit. */
    private static AttachedRun leakInCAfterAnAttach(boolean bindNow, String options) throws Exception {
        List<String> jvm = bindNow ? List.of("-Dncclguard.samples.ep.bindNow=true") : List.of();
        try (LiveChild app = LiveChild.sample(JAVA_17, jvm, Map.of(), "samples: ep-serve: ready", "ep-serve")) {
            Output attach = cli(JAVA_17, "attach", Long.toString(app.pid()), options);
            assertEquals(0, attach.exitCode(), attach.describe());
            app.send("leak");
            app.await("samples: ep-serve: leaked");
            assertEquals(0, app.stop(), app.describe());
            return new AttachedRun(app.stderr());
        }
    }

    @Test
    void reportPathsThatCannotBeWrittenAndOutOfRangeValuesFailTheAttachAndLeaveTheTargetUntouched() throws Exception {
        try (LiveChild app = LiveChild.serve(JAVA_17, List.of(), Map.of())) {
            String pid = Long.toString(app.pid());

            Output directory = cli(JAVA_17, "attach", pid, "report=" + dir);
            assertEquals(2, directory.exitCode(), directory.describe());
            assertEquals(List.of("ncclguard: cannot write report to " + dir + ": it is a directory; set report= to a"
                    + " writable path"), directory.errLines());

            for (String path : List.of("/proc/x.json", dir + "/" + "r".repeat(300) + ".json")) {
                Output unwritable = cli(JAVA_17, "attach", pid, "report=" + path);
                assertEquals(2, unwritable.exitCode(), unwritable.describe());
                assertEquals(1, unwritable.errLines().size(), unwritable.describe());
                assertTrue(unwritable.errLines().get(0).startsWith("ncclguard: cannot write report to " + path + ": "),
                        unwritable.describe());
            }

            Output same = cli(JAVA_17, "attach", pid, "report=" + dir.resolve("r") + ",text=" + dir.resolve("r"));
            assertEquals(2, same.exitCode(), same.describe());
            assertTrue(same.errLines().get(0).contains("report= and text= name the same file"), same.describe());

            Output timeout = cli(JAVA_17, "attach", pid, "timeout=3000000h");
            assertEquals(2, timeout.exitCode(), timeout.describe());
            assertTrue(timeout.errLines().get(0).contains("from 1ms to 24h"), timeout.describe());

            Output dump = cli(JAVA_17, "dump", pid);
            assertEquals(2, dump.exitCode(), dump.describe());
            assertTrue(dump.stderr().contains("not running in pid " + pid), dump.describe());
            assertEquals(0, app.stop(), app.describe());
            assertEquals("", app.stderr(), "nothing installed, nothing printed: " + app.describe());
        }
    }

    @Test
    void badOptionsFailWithOneLineAndLeaveTheTargetUntouched() throws Exception {
        // the target's environment holds a bad option too: only the agent, in the target, can see it
        try (LiveChild app = LiveChild.serve(JAVA_17, List.of(), Map.of("NCCLGUARD_STACKS", "sometimes"))) {
            String pid = Long.toString(app.pid());

            Output badArgument = cli(JAVA_17, "attach", pid, "timeout=forever");
            assertEquals(2, badArgument.exitCode(), badArgument.describe());
            assertEquals(List.of("ncclguard: invalid value 'forever' for option timeout: expected a duration from 1ms"
                    + " to 24h such as 500ms, 10s or 2m"), badArgument.errLines());

            Output badEnvironment = cli(JAVA_17, "attach", pid);
            assertEquals(2, badEnvironment.exitCode(), badEnvironment.describe());
            assertEquals(List.of("ncclguard: invalid value 'sometimes' for option stacks (environment variable"
                    + " NCCLGUARD_STACKS): expected on or off"), badEnvironment.errLines());

            Output dump = cli(JAVA_17, "dump", pid);
            assertEquals(2, dump.exitCode(), dump.describe());
            assertTrue(dump.stderr().contains("not running in pid " + pid), dump.describe());

            app.send("leak");
            app.await("serve: leaked");
            assertEquals(0, app.stop(), app.describe());
            assertTrue(app.stdout().contains("results correct"), app.describe());
            assertEquals("", app.stderr(), "nothing installed, nothing printed: " + app.describe());
        }
    }

    @Test
    void onJava25TheAttachAndTheDumpSayTheJvmWarns() throws Exception {
        assertTrue(Files.isExecutable(JDK_25.resolve("bin/java")), "Temurin 25 is expected at " + JDK_25);
        String java25 = JDK_25.toString();
        try (LiveChild app = LiveChild.serve(java25, List.of(), Map.of())) {
            String pid = Long.toString(app.pid());
            Output attach = cli(java25, "attach", pid, "text=none");
            assertEquals(0, attach.exitCode(), attach.describe());
            assertEquals(1, attach.errLines().size(), attach.describe());
            assertTrue(attach.errLines().get(0).contains("without -XX:+EnableDynamicAgentLoading"), attach.describe());
            assertTrue(attach.stdout().contains("no NCCL RAS service answered"), attach.describe());

            app.send("leak");
            app.await("serve: leaked");
            Output dump = cli(java25, "dump", pid);
            assertEquals(0, dump.exitCode(), dump.describe());
            assertTrue(dump.stdout().contains("Leaked communicator") && dump.stdout().contains("leakCommunicatorAndEvent"),
                    dump.describe());
            assertTrue(dump.stdout().contains("ncclguard: tracking since "), dump.describe());
            assertEquals(1, dump.errLines().size(), dump.describe());
            assertTrue(dump.errLines().get(0).contains("without -XX:+EnableDynamicAgentLoading"), dump.describe());
            assertEquals(0, app.stop(), app.describe());
            assertTrue(app.stderr().contains(DYNAMIC_AGENT_WARNING), app.describe());
        }
    }

    /** Inodes of the TCP sockets {@code pid} listens on: its socket descriptors that /proc/PID/net/tcp{,6} list as LISTEN. */
    private static List<String> listeningTcpSockets(long pid) throws Exception {
        List<String> owned = new ArrayList<>();
        try (var fds = Files.list(Path.of("/proc", Long.toString(pid), "fd"))) {
            for (Path fd : fds.toList()) {
                try {
                    String link = Files.readSymbolicLink(fd).toString();
                    if (link.startsWith("socket:[")) {
                        owned.add(link.substring("socket:[".length(), link.length() - 1));
                    }
                } catch (java.io.IOException e) {
                    // closed meanwhile
                }
            }
        }
        List<String> listening = new ArrayList<>();
        for (String table : List.of("tcp", "tcp6")) {
            for (String line : Files.readAllLines(Path.of("/proc", Long.toString(pid), "net", table))) {
                String[] f = line.trim().split("\\s+");
                // sl local rem st ... inode (field 9); st 0A is LISTEN
                if (f.length > 9 && f[3].equals("0A") && owned.contains(f[9])) {
                    listening.add(table + ":" + f[1] + ":" + f[9]);
                }
            }
        }
        return listening;
    }

    @Test
    void dumpLeavesNoTcpListenerInTheTarget() throws Exception {
        try (LiveChild app = LiveChild.serve(JAVA_17, List.of("-javaagent:" + ChildJvm.AGENT_JAR + "=text=none"),
                Map.of())) {
            List<String> before = listeningTcpSockets(app.pid());
            Output dump = cli(JAVA_17, "dump", Long.toString(app.pid()), "--json");
            assertEquals(0, dump.exitCode(), dump.describe());
            assertTrue(parse(dump.stdout()).path("live").asBoolean(), dump.stdout());
            assertEquals(before, listeningTcpSockets(app.pid()), "listening TCP sockets of the target after a dump");
            assertEquals(0, app.stop(), app.describe());
        }
    }

    @Test
    void dumpOfAJvmStartedWithTheAgent() throws Exception {
        try (LiveChild app = LiveChild.serve(JAVA_17, List.of("-javaagent:" + ChildJvm.AGENT_JAR + "=text=none"),
                Map.of())) {
            Output dump = cli(JAVA_17, "dump", Long.toString(app.pid()), "--json");
            assertEquals(0, dump.exitCode(), dump.describe());
            JsonNode live = parse(dump.stdout());
            assertFalse(live.has("attachedAt"), dump.stdout());
            // with the agent from the start, the communicators the ranks joined are known
            assertEquals(2, comms(live, "Serve.rank").size(), dump.stdout());
            assertEquals(0, app.stop(), app.describe());
        }
    }
}
