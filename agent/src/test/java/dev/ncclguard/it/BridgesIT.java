package dev.ncclguard.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.ncclguard.it.apps.NativeCallsApp;
import dev.ncclguard.testkit.ChildJvm;
import dev.ncclguard.testkit.Output;
import dev.ncclguard.testkit.ReportJson;
import dev.ncclguard.testkit.Repository;
import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The samples over the native-method bridges (JNA direct mapping, hand-written JNI named as the C
 * functions, hand-written JNI of other names through a bindings file), each in a child JVM under
 * the agent against the emulator.
 */
class BridgesIT {
    static final Path BINDINGS = ChildJvm.SAMPLES_JAR.getParent().getParent().resolve("bindings").resolve("jni.txt");
    static final String JDK25 = "/usr/lib/jvm/temurin-25-jdk-amd64";

    @TempDir
    Path dir;

    /** The agent options a bridge needs besides {@code extra}. */
    private static String options(String bridge, String extra) {
        return bridge.equals("jni-bindings") ? extra + ",bindings=" + BINDINGS : extra;
    }

    /**
     * A leaky run with action=cleanup: every communicator and event leaked is found, labelled with
     * the bridge, created by the binding's method called from the sample's step, then released.
     */
    @ParameterizedTest
    @CsvSource({
        "jna-direct,   jna-direct, dev.ncclguard.samples.direct.DirectNccl.ncclCommInitRank, dev.ncclguard.samples.direct.DirectCudart.cudaEventCreate",
        "jni,          jni,        dev.ncclguard.samples.jni.JniNccl.ncclCommInitRank,       dev.ncclguard.samples.jni.JniCudart.cudaEventCreate",
        "jni-bindings, jni,        dev.ncclguard.samples.jni.Comms.createComm,               dev.ncclguard.samples.jni.JniCudart.cudaEventCreate",
    })
    void leaksAreFoundWithTheirBridgeAndCreatingFrameAndCleanupReleasesThem(String bridge, String label,
            String commFrame, String eventFrame) throws Exception {
        Path report = dir.resolve("leaky.json");
        Path alive = dir.resolve("alive.txt");
        Output r = ChildJvm.sample().agent(options(bridge, "action=cleanup,report=" + report))
                .env("NCCLEMU_REPORT", alive.toString()).run("leaky", "--bridge", bridge);
        assertEquals(0, r.exitCode(), r.describe());
        assertTrue(r.stdout().contains("through " + bridge), r.describe());
        JsonNode json = ReportJson.read(report);
        List<JsonNode> comms = ReportJson.leaks(json, "comm");
        assertEquals(2, comms.size(), json.toString());
        for (JsonNode comm : comms) {
            assertEquals("ncclCommInitRank", comm.path("api").asText());
            assertEquals(label, comm.path("bridge").asText());
            assertCreatedBy(comm, commFrame, "dev.ncclguard.samples.Rank.initCommunicator(");
            assertEquals(2, comm.path("details").path("nranks").asInt());
            assertEquals("destroyed", comm.path("cleanup").asText(), comm.toString());
        }
        List<JsonNode> events = ReportJson.leaks(json, "event");
        assertEquals(2, events.size(), json.toString());
        for (JsonNode event : events) {
            assertEquals(label, event.path("bridge").asText());
            assertCreatedBy(event, eventFrame, "dev.ncclguard.samples.Rank.createEvent(");
            assertTrue(event.path("details").has("stillPending"), "exit probe through the binding: " + event);
        }
        assertEquals(2, ReportJson.leaks(json, "stream").size(), json.toString());
        assertEquals(0, ReportJson.summary(json, "cleanupFailed"), json.toString());
        List<String> left = ReportJson.aliveAtExit(alive);
        assertTrue(left.stream().noneMatch(l -> l.startsWith("comm") || l.startsWith("event")),
                "still alive after cleanup: " + left + "\n" + r.describe());
    }

    private static void assertCreatedBy(JsonNode leak, String bindingMethod, String step) {
        JsonNode stack = leak.path("stack");
        assertTrue(stack.path(0).asText().startsWith(bindingMethod + "("), "first frame: " + leak);
        boolean found = false;
        for (JsonNode frame : stack) {
            assertFalse(frame.asText().startsWith("dev.ncclguard.bridge") || frame.asText().startsWith("dev.ncclguard.bootstrap")
                    || frame.asText().contains("$$ncclguard$$"), "agent frame in " + leak);
            found |= frame.asText().startsWith(step);
        }
        assertTrue(found, step + " in " + leak);
    }

    @ParameterizedTest
    @CsvSource({"jna", "jna-direct", "jni", "jni-bindings"})
    void cleanRunReportsNothing(String bridge) throws Exception {
        Path report = dir.resolve("clean.json");
        Output r = ChildJvm.sample().agent(options(bridge, "report=" + report + ",exit-code=3"))
                .run("clean", "--bridge", bridge);
        assertEquals(0, r.exitCode(), r.describe());
        JsonNode json = ReportJson.read(report);
        assertEquals(0, json.path("leaks").size(), json.toString());
        assertEquals(2, ReportJson.summary(json, "commsCreated"));
        assertEquals(2, ReportJson.summary(json, "commsReleased"));
    }

    @ParameterizedTest
    @CsvSource({"jna", "jni"})
    void communicatorsDestroyedInTheApplicationsShutdownHookAreNoLeak(String bridge) throws Exception {
        Path report = dir.resolve("hook.json");
        Output r = ChildJvm.sample().agent("report=" + report).run("destroy-in-hook", "--bridge", bridge);
        assertEquals(0, r.exitCode(), r.describe());
        JsonNode json = ReportJson.read(report);
        assertEquals(0, ReportJson.leaks(json, "comm").size(), json.toString());
        assertEquals(2, ReportJson.summary(json, "commsReleased"));
    }

    @Test
    void workStillRunningAtExitIsSeenThroughJnaDirectMapping() throws Exception {
        Path report = dir.resolve("pending.json");
        Output r = ChildJvm.sample().agent("report=" + report)
                .env("NCCLEMU_OP_DELAY_US", "3000000").run("pending", "--bridge", "jna-direct");
        assertEquals(0, r.exitCode(), r.describe());
        List<JsonNode> events = ReportJson.leaks(ReportJson.read(report), "event");
        assertFalse(events.isEmpty(), r.describe());
        for (JsonNode event : events) {
            assertTrue(event.path("details").path("stillPending").asBoolean(), event.toString());
        }
    }

    @Test
    void wrappedNativeMethodsReturnAndThrowWhatTheyDidWithoutTheAgent() throws Exception {
        String cp = testClasses() + File.pathSeparator + ChildJvm.SAMPLES_JAR;
        Output plain = ChildJvm.sample().mainClass(cp, NativeCallsApp.class.getName()).run();
        Output wrapped = ChildJvm.sample().agent("text=none,bindings=" + BINDINGS)
                .mainClass(cp, NativeCallsApp.class.getName()).run();
        assertEquals(0, plain.exitCode(), plain.describe());
        assertEquals(0, wrapped.exitCode(), wrapped.describe());
        assertEquals(plain.stdout(), wrapped.stdout());
        assertTrue(plain.stdout().contains("ncclCommInitRank with a 3-byte id threw java.lang.IllegalArgumentException:"
                + " ncclUniqueId must be 128 bytes"), plain.describe());
        assertTrue(plain.stdout().contains("createComm with 0 ranks threw java.lang.IllegalStateException"), plain.describe());
        assertTrue(plain.stdout().contains("createComm of 1 rank is not 0 -> true"), plain.describe());
        assertFalse(wrapped.stderr().contains("ncclguard:"), "the agent said nothing: " + wrapped.describe());
    }

    @Test
    void aBadBindingsFileStopsTheJvmNamingTheLine() throws Exception {
        Path bad = Files.writeString(dir.resolve("bad.txt"), "# ok\na.B#c = ncclCommDestroy handle=0\na.B#d = ncclNope handle=0\n");
        Output r = ChildJvm.sample().agent("bindings=" + bad).run("clean");
        assertEquals(1, r.exitCode(), r.describe());
        assertEquals("ncclguard: bindings file " + bad + " line 3: unknown function 'ncclNope': not one that"
                + " ncclguard follows", r.stderr().strip(), r.describe());
        assertEquals("", r.stdout(), "main never ran");
    }

    @Test
    void bindingsFileIsAlsoReadFromTheEnvironment() throws Exception {
        Path report = dir.resolve("env.json");
        Output r = ChildJvm.sample().agent("report=" + report).env("NCCLGUARD_BINDINGS", BINDINGS.toString())
                .run("leaky", "--bridge", "jni-bindings");
        assertEquals(0, r.exitCode(), r.describe());
        assertEquals(2, ReportJson.leaks(ReportJson.read(report), "comm").size(), r.describe());
    }

    @Test
    void withoutTheBindingsFileMethodsOfOtherNamesAreNotSeenByTheJavaBridges() throws Exception {
        Path report = dir.resolve("none.json");
        // the native part sees them (NativeInterposerIT); the Java bridges alone do not
        Output r = ChildJvm.sample().agent("native=off,nccl-profiler=off,report=" + report)
                .run("leaky", "--bridge", "jni-bindings");
        assertEquals(0, r.exitCode(), r.describe());
        assertEquals(0, ReportJson.leaks(ReportJson.read(report), "comm").size(), r.describe());
    }

    @Test
    void anApplicationsOwnJnaProfilerPrefixIsSharedSoDirectMappingStillBinds() throws Exception {
        Path report = dir.resolve("prefix.json");
        Output r = ChildJvm.sample().agent("report=" + report).jvmArg("-Djna.profiler.prefix=appPrefix_")
                .run("leaky", "--bridge", "jna-direct");
        assertEquals(0, r.exitCode(), r.describe());
        assertEquals(2, ReportJson.leaks(ReportJson.read(report), "comm").size(), r.describe());
        assertTrue(r.stderr().contains("jna.profiler.prefix is already set to 'appPrefix_'"), r.describe());
    }

    @Test
    void anEmptyJnaProfilerPrefixLeavesJnaDirectUntrackedAndSaysSoWhileJniIsStillTracked() throws Exception {
        Path direct = dir.resolve("direct.json");
        // NCCL's profiler plugin would still see the communicators: off, to see the Java bridge alone
        Output r = ChildJvm.sample().agent("nccl-profiler=off,report=" + direct).jvmArg("-Djna.profiler.prefix=")
                .run("leaky", "--bridge", "jna-direct");
        assertEquals(0, r.exitCode(), r.describe());
        assertEquals(0, ReportJson.leaks(ReportJson.read(direct), "comm").size(), r.describe());
        assertTrue(r.stderr().contains("JNA direct-mapped classes are NOT tracked"), r.describe());
        Path jni = dir.resolve("jni.json");
        Output j = ChildJvm.sample().agent("report=" + jni).jvmArg("-Djna.profiler.prefix=")
                .run("leaky", "--bridge", "jni");
        assertEquals(2, ReportJson.leaks(ReportJson.read(jni), "comm").size(), j.describe());
    }

    @Test
    void jnaDirectMappingIsTrackedOnJdk25WithoutWarnings() throws Exception {
        String bridge = "jna-direct";
        Path report = dir.resolve("jdk25.json");
        Output r = ChildJvm.sample().javaHome(JDK25).agent("report=" + report + ",text=none")
                .run("leaky", "--bridge", bridge);
        assertEquals(0, r.exitCode(), r.describe());
        assertEquals(2, ReportJson.leaks(ReportJson.read(report), "comm").size(), r.describe());
        assertFalse(r.stderr().contains("WARNING"), r.describe());
    }

    @Test
    void ffmDowncallsAreTrackedOnJdk25AndCleanupReleasesTheirLeaks() throws Exception {
        Path report = dir.resolve("ffm.json");
        Path alive = dir.resolve("alive.txt");
        Output r = ChildJvm.sample().javaHome(JDK25).agent("action=cleanup,report=" + report)
                .env("NCCLEMU_REPORT", alive.toString()).run("leaky", "--bridge", "ffm");
        assertEquals(0, r.exitCode(), r.describe());
        assertFalse(r.stderr().contains("WARNING"), r.describe());
        JsonNode json = ReportJson.read(report);
        List<JsonNode> comms = ReportJson.leaks(json, "comm");
        assertEquals(2, comms.size(), json.toString());
        for (JsonNode comm : comms) {
            assertEquals("ffm", comm.path("bridge").asText());
            assertCreatedBy(comm, "dev.ncclguard.samples.ffm.FfmGpu.call", "dev.ncclguard.samples.Rank.initCommunicator(");
            assertEquals(2, comm.path("details").path("nranks").asInt(), "read from the segments: " + comm);
            assertEquals("destroyed", comm.path("cleanup").asText(), comm.toString());
        }
        List<JsonNode> events = ReportJson.leaks(json, "event");
        assertEquals(2, events.size(), json.toString());
        for (JsonNode event : events) {
            assertEquals("ffm", event.path("bridge").asText());
            assertTrue(event.path("details").has("stillPending"), "exit probe through FFM: " + event);
        }
        assertEquals(0, ReportJson.summary(json, "cleanupFailed"), json.toString());
        List<String> left = ReportJson.aliveAtExit(alive);
        assertTrue(left.stream().noneMatch(l -> l.startsWith("comm") || l.startsWith("event")),
                "still alive after cleanup: " + left + "\n" + r.describe());
    }

    @Test
    void cleanFfmRunReportsNothing() throws Exception {
        Path report = dir.resolve("ffm-clean.json");
        Output r = ChildJvm.sample().javaHome(JDK25).agent("report=" + report).run("clean", "--bridge", "ffm");
        assertEquals(0, r.exitCode(), r.describe());
        JsonNode json = ReportJson.read(report);
        assertEquals(0, json.path("leaks").size(), json.toString());
        assertEquals(2, ReportJson.summary(json, "commsReleased"));
    }

    /** The samples jar and JavaCPP's CUDA presets, with JavaCPP's cache inside the build folder. */
    static ChildJvm javacpp() throws Exception {
        Path jars = Path.of(System.getProperty("ncclguard.test.javacpp"));
        StringBuilder cp = new StringBuilder(ChildJvm.SAMPLES_JAR.toString());
        try (var files = Files.list(jars)) {
            files.sorted().forEach(f -> cp.append(File.pathSeparator).append(f));
        }
        return ChildJvm.sample().jvmArg("-Dorg.bytedeco.javacpp.cachedir=" + jars.resolveSibling("javacpp-cache"))
                .mainClass(cp.toString(), "dev.ncclguard.samples.Samples");
    }

    @Test
    void javacppPresetsAreTrackedWithTheirObjectsAndCleanupGoesThroughThem() throws Exception {
        Path report = dir.resolve("javacpp.json");
        Path alive = dir.resolve("alive.txt");
        Output r = javacpp().agent("action=cleanup,report=" + report).env("NCCLEMU_REPORT", alive.toString())
                .run("leaky", "--bridge", "javacpp");
        assertEquals(0, r.exitCode(), r.describe());
        JsonNode json = ReportJson.read(report);
        List<JsonNode> comms = ReportJson.leaks(json, "comm");
        assertEquals(2, comms.size(), json.toString());
        java.util.Set<String> commIds = new java.util.HashSet<>();
        for (JsonNode comm : comms) {
            assertEquals("javacpp", comm.path("bridge").asText());
            assertCreatedBy(comm, "org.bytedeco.cuda.global.nccl.ncclCommInitRank", "dev.ncclguard.samples.Rank.initCommunicator(");
            commIds.add(comm.path("details").path("commId").asText());
            assertEquals("destroyed", comm.path("cleanup").asText(), comm.toString());
        }
        assertEquals(1, commIds.size(), "the ncclUniqueId object's bytes were read: " + commIds);
        List<JsonNode> events = ReportJson.leaks(json, "event");
        assertEquals(2, events.size(), json.toString());
        for (JsonNode event : events) {
            assertCreatedBy(event, "org.bytedeco.cuda.global.cudart.cudaEventCreate", "dev.ncclguard.samples.Rank.createEvent(");
            assertTrue(event.path("details").has("stillPending"), "exit probe through JavaCPP: " + event);
        }
        assertEquals(0, ReportJson.summary(json, "cleanupFailed"), json.toString());
        List<String> left = ReportJson.aliveAtExit(alive);
        assertTrue(left.stream().noneMatch(l -> l.startsWith("comm") || l.startsWith("event")),
                "still alive after cleanup: " + left + "\n" + r.describe());
    }

    @Test
    void cleanJavacppRunReportsNothing() throws Exception {
        Path report = dir.resolve("javacpp-clean.json");
        Output r = javacpp().agent("report=" + report).run("clean", "--bridge", "javacpp", "--init", "all");
        assertEquals(0, r.exitCode(), r.describe());
        JsonNode json = ReportJson.read(report);
        assertEquals(0, json.path("leaks").size(), json.toString());
        assertEquals(2, ReportJson.summary(json, "commsCreated"), "ncclCommInitAll's PointerPointer read: " + json);
        assertEquals(2, ReportJson.summary(json, "commsReleased"));
    }

    private static String testClasses() {
        return Repository.classpathOf(NativeCallsApp.class);
    }
}
