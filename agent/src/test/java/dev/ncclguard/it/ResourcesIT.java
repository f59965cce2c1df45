package dev.ncclguard.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.ncclguard.testkit.ChildJvm;
import dev.ncclguard.testkit.Output;
import dev.ncclguard.testkit.ReportJson;
import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * NCCL 2.28's other resources (ncclMemAlloc's memory, registrations, windows, device
 * communicators) and 2.29's grow and revoke, over every bridge, in a child JVM under the agent
 * against the emulator (the samples' resources-* and grow-* scenarios, two ranks).
 */
class ResourcesIT {
    /** Rank.NCCL_MEMORY_BYTES: each rank's ncclMemAlloc, registered and windowed in halves. */
    private static final long MEMORY_BYTES = 1 << 20;

    @TempDir
    Path dir;

    /** The sample under {@code bridge}: FFM on JDK 25, JavaCPP with its presets, jni-bindings with its file. */
    private static ChildJvm sample(String bridge, String options) throws Exception {
        return switch (bridge) {
            case "ffm" -> ChildJvm.sample().javaHome(BridgesIT.JDK25).agent(options);
            case "javacpp" -> javacpp().agent(options);
            case "jni-bindings" -> ChildJvm.sample().agent(options + ",bindings=" + BridgesIT.BINDINGS);
            default -> ChildJvm.sample().agent(options);
        };
    }

    private static ChildJvm javacpp() throws Exception {
        Path jars = Path.of(System.getProperty("ncclguard.test.javacpp"));
        StringBuilder cp = new StringBuilder(ChildJvm.SAMPLES_JAR.toString());
        try (var files = Files.list(jars)) {
            files.sorted().forEach(f -> cp.append(File.pathSeparator).append(f));
        }
        return ChildJvm.sample().jvmArg("-Dorg.bytedeco.javacpp.cachedir=" + jars.resolveSibling("javacpp-cache"))
                .mainClass(cp.toString(), "dev.ncclguard.samples.Samples");
    }

    /** Whether the bridge reaches ncclDevCommCreate: JavaCPP's presets do not map nccl_device/core.h. */
    private static boolean devComms(String bridge) {
        return !bridge.equals("javacpp");
    }

    @ParameterizedTest
    @ValueSource(strings = {"jna", "jna-direct", "jni", "jni-bindings", "ffm", "javacpp"})
    void memoryAndDeviceCommunicatorsLeftAliveAreReportedWithSizeDeviceAndCreatingStep(String bridge) throws Exception {
        Path report = dir.resolve("leaky.json");
        Output r = sample(bridge, "report=" + report).run("resources-leaky", "--bridge", bridge);
        assertEquals(0, r.exitCode(), r.describe());
        JsonNode json = ReportJson.read(report);
        List<JsonNode> memory = ReportJson.leaks(json, "memory");
        assertEquals(2, memory.size(), json.toString());
        Set<Integer> devices = new HashSet<>();
        for (JsonNode m : memory) {
            assertEquals("ncclMemAlloc", m.path("api").asText(), m.toString());
            assertEquals(MEMORY_BYTES, m.path("details").path("bytes").asLong(), m.toString());
            devices.add(m.path("details").path("device").asInt());
            assertStepInStack(m, "dev.ncclguard.samples.Rank.allocateNcclMemory(");
        }
        assertEquals(Set.of(0, 1), devices, "each rank's memory on its own device: " + memory);
        assertEquals(2, ReportJson.summary(json, "leakedMemory"));
        List<JsonNode> devs = ReportJson.leaks(json, "devcomm");
        assertEquals(devComms(bridge) ? 2 : 0, devs.size(), json.toString());
        assertEquals(devs.size(), ReportJson.summary(json, "leakedDevComms"));
        Set<String> owners = new HashSet<>();
        for (JsonNode d : devs) {
            assertEquals("ncclDevCommCreate", d.path("api").asText(), d.toString());
            assertEquals(2, d.path("details").path("nranks").asInt(), "the struct NCCL filled in was read: " + d);
            owners.add(d.path("details").path("comm").asText());
            assertStepInStack(d, "dev.ncclguard.samples.Rank.createDeviceCommunicator(");
        }
        Set<String> comms = new HashSet<>();
        ReportJson.leaks(json, "comm").forEach(c -> comms.add(c.path("handle").asText()));
        assertTrue(comms.containsAll(owners), "each device communicator names its communicator: " + owners + " " + comms);
    }

    @ParameterizedTest
    @ValueSource(strings = {"jna", "jna-direct", "jni", "jni-bindings", "ffm", "javacpp"})
    void aLeakedCommunicatorShowsItsRegistrationsWindowsAndDeviceCommunicators(String bridge) throws Exception {
        Path report = dir.resolve("leaky.json");
        Output r = sample(bridge, "report=" + report).run("resources-leaky", "--bridge", bridge);
        assertEquals(0, r.exitCode(), r.describe());
        JsonNode json = ReportJson.read(report);
        List<JsonNode> comms = ReportJson.leaks(json, "comm");
        assertEquals(2, comms.size(), json.toString());
        for (JsonNode c : comms) {
            JsonNode details = c.path("details");
            for (String registry : List.of("registrations", "windows")) {
                JsonNode counts = details.path(registry);
                assertEquals(1, counts.path("registered").asInt(), registry + " of " + c);
                assertEquals(1, counts.path("stillRegistered").asInt(), registry + " of " + c);
                assertEquals(MEMORY_BYTES / 2, counts.path("bytes").asLong(), registry + " of " + c);
            }
            assertEquals(devComms(bridge) ? 1 : 0, details.path("deviceCommunicators").asInt(), c.toString());
        }
        assertTrue(r.stderr().contains("still registered (" + MEMORY_BYTES / 2 + " bytes)"), r.describe());
    }

    @ParameterizedTest
    @ValueSource(strings = {"jna", "jna-direct", "jni", "jni-bindings", "ffm", "javacpp"})
    void cleanupDestroysDeviceCommunicatorsThenCommunicatorsThenFreesTheMemoryLeavingNothingAlive(String bridge)
            throws Exception {
        Path report = dir.resolve("cleanup.json");
        Path alive = dir.resolve("alive.txt");
        Output r = sample(bridge, "action=cleanup,report=" + report).env("NCCLEMU_REPORT", alive.toString())
                .run("resources-leaky", "--bridge", bridge);
        assertEquals(0, r.exitCode(), r.describe());
        JsonNode json = ReportJson.read(report);
        for (JsonNode d : ReportJson.leaks(json, "devcomm")) {
            assertEquals("destroyed", d.path("cleanup").asText(), d.toString());
        }
        for (JsonNode c : ReportJson.leaks(json, "comm")) {
            assertEquals("destroyed", c.path("cleanup").asText(), c.toString());
        }
        List<JsonNode> memory = ReportJson.leaks(json, "memory");
        assertEquals(2, memory.size(), json.toString());
        for (JsonNode m : memory) {
            assertEquals("freed", m.path("cleanup").asText(), m.toString());
        }
        assertEquals(0, ReportJson.summary(json, "cleanupFailed"), json.toString());
        assertEquals(List.of(), ReportJson.aliveAtExit(alive), "the emulator's list of what is alive at exit\n" + r.describe());
    }

    @ParameterizedTest
    @ValueSource(strings = {"jna", "jna-direct", "jni", "jni-bindings", "ffm", "javacpp"})
    void resourcesReleasedInOrderAreNoLeak(String bridge) throws Exception {
        Path report = dir.resolve("clean.json");
        Output r = sample(bridge, "report=" + report + ",exit-code=3").run("resources-clean", "--bridge", bridge);
        assertEquals(0, r.exitCode(), r.describe());
        JsonNode json = ReportJson.read(report);
        assertEquals(0, json.path("leaks").size(), json.toString());
        assertEquals(0, ReportJson.summary(json, "leakedMemory"));
        assertEquals(0, ReportJson.summary(json, "leakedDevComms"));
        assertEquals(2, ReportJson.summary(json, "commsReleased"));
    }

    @ParameterizedTest
    @ValueSource(strings = {"jna", "jna-direct", "jni", "ffm", "javacpp"})
    void grownCommunicatorsShareOneCommIdNameTheirParentAndAreReportedRevoked(String bridge) throws Exception {
        Path report = dir.resolve("grow.json");
        Path alive = dir.resolve("alive.txt");
        Output r = sample(bridge, "report=" + report).env("NCCLEMU_REPORT", alive.toString())
                .run("grow-revoke", "--bridge", bridge);
        assertEquals(0, r.exitCode(), r.describe());
        JsonNode json = ReportJson.read(report);
        List<JsonNode> grown = ReportJson.leaks(json, "comm");
        assertEquals(3, grown.size(), "two existing ranks and the new one: " + json);
        Set<String> commIds = new HashSet<>();
        Set<Integer> ranks = new HashSet<>();
        int withParent = 0;
        for (JsonNode c : grown) {
            assertEquals("ncclCommGrow", c.path("api").asText(), c.toString());
            JsonNode details = c.path("details");
            assertEquals(3, details.path("nranks").asInt(), c.toString());
            assertTrue(details.path("revoked").asBoolean(), c.toString());
            commIds.add(details.path("commId").asText());
            ranks.add(details.path("rank").asInt());
            if (details.has("parentCommId")) {
                withParent++;
                assertFalse(details.path("parentCommId").asText().equals(details.path("commId").asText()), c.toString());
            }
        }
        assertEquals(1, commIds.size(), "every rank names the grown communicator alike: " + commIds);
        // and as NCCL does: the emulator lists each live communicator with its commHash
        for (JsonNode c : grown) {
            String line = ReportJson.aliveAtExit(alive).stream().filter(l -> l.startsWith("comm " + c.path("handle").asText() + " "))
                    .findFirst().orElseThrow(() -> new AssertionError("not alive in the emulator: " + c));
            String emulated = line.replaceAll(".* commId 0x([0-9a-f]+).*", "$1");
            assertEquals(Long.parseUnsignedLong(emulated, 16),
                    Long.parseUnsignedLong(c.path("details").path("commId").asText(), 16), line + " vs " + c);
            assertTrue(line.endsWith(" revoked"), line);
        }
        assertFalse(commIds.contains(""), "commId present: " + grown);
        assertEquals(Set.of(0, 1, 2), ranks, grown.toString());
        assertEquals(2, withParent, "the existing ranks name their parent: " + grown);
        assertTrue(r.stderr().contains("revoked (ncclCommRevoke) and never destroyed or aborted"), r.describe());
    }

    @Test
    void grownAndRevokedCommunicatorsAreDestroyedByCleanup() throws Exception {
        Path report = dir.resolve("grow-cleanup.json");
        Path alive = dir.resolve("alive.txt");
        Output r = javacpp().agent("action=cleanup,report=" + report).env("NCCLEMU_REPORT", alive.toString())
                .run("grow-revoke", "--bridge", "javacpp");
        assertEquals(0, r.exitCode(), r.describe());
        JsonNode json = ReportJson.read(report);
        List<JsonNode> grown = ReportJson.leaks(json, "comm");
        assertEquals(3, grown.size(), json.toString());
        for (JsonNode c : grown) {
            assertEquals("destroyed", c.path("cleanup").asText(), c.toString());
        }
        assertEquals(List.of(), ReportJson.aliveAtExit(alive), r.describe());
    }

    @ParameterizedTest
    @ValueSource(strings = {"jna", "javacpp"})
    void grownCommunicatorsDestroyedAfterRevokeAreNoLeak(String bridge) throws Exception {
        Path report = dir.resolve("grow-clean.json");
        Output r = sample(bridge, "report=" + report).run("grow-clean", "--bridge", bridge);
        assertEquals(0, r.exitCode(), r.describe());
        JsonNode json = ReportJson.read(report);
        assertEquals(0, json.path("leaks").size(), json.toString());
        assertEquals(5, ReportJson.summary(json, "commsCreated"), "two parents and three grown: " + json);
        assertEquals(5, ReportJson.summary(json, "commsReleased"));
    }

    @Test
    void memoryAndDeviceCommunicatorsAreSuppressedByTheirKinds() throws Exception {
        Path report = dir.resolve("suppressed.json");
        Path rules = Files.writeString(dir.resolve("known.supp"),
                "memory:Rank.allocateNcclMemory\ndevcomm:Rank.createDeviceCommunicator\n");
        Output r = sample("jna", "report=" + report + ",suppress=" + rules).run("resources-leaky", "--bridge", "jna");
        assertEquals(0, r.exitCode(), r.describe());
        JsonNode json = ReportJson.read(report);
        assertEquals(0, ReportJson.leaks(json, "memory").size(), json.toString());
        assertEquals(0, ReportJson.leaks(json, "devcomm").size(), json.toString());
        assertEquals(2, ReportJson.leaks(json, "comm").size(), json.toString());
        assertEquals(4, ReportJson.summary(json, "suppressed"), json.toString());
    }

    /**
     * JavaCPP beside a CUDA runtime that is not the emulator's (a stand-in with the soname
     * libcudart.so.13 and none of the emulator's symbols, first on the library path): NCCL says so
     * in one line at its first call and keeps answering, CUDA's calls fail as without a driver, and
     * the sample ends on that failed call, its report written: no symbol lookup error, no crash.
     */
    @Test
    void javacppBesideAForeignCudaRuntimeGetsOneLineAndAFailedCallNotACrash() throws Exception {
        Path standIn = ChildJvm.EMU.resolveSibling("emu-test").resolve("fake-cudart");
        assertTrue(Files.isRegularFile(standIn.resolve("libcudart.so.13")), "no stand-in runtime in " + standIn);
        Path report = dir.resolve("foreign.json");
        Output r = javacpp().agent("report=" + report)
                .env("LD_LIBRARY_PATH", standIn + File.pathSeparator + ChildJvm.EMU)
                .run("clean", "--bridge", "javacpp");
        assertEquals(1, r.exitCode(), "a failed call, not a crash: " + r.describe());
        long lines = r.stderr().lines()
                .filter(l -> l.contains("NCCL WARN NCCLEMU: libnccl.so.2 is the emulator's, but the libcudart.so.13"
                        + " loaded first is not"))
                .count();
        assertEquals(1, lines, r.describe());
        assertTrue(r.stderr().contains("samples: FAILED: cudaGetDeviceCount"), r.describe());
        assertFalse(r.stderr().contains("symbol lookup error"), r.describe());
        assertFalse(r.stdout().contains("A fatal error has been detected"), r.describe());
        assertEquals(0, ReportJson.read(report).path("leaks").size(), r.describe());
    }

    private static void assertStepInStack(JsonNode leak, String step) {
        boolean found = false;
        for (JsonNode frame : leak.path("stack")) {
            assertFalse(frame.asText().startsWith("dev.ncclguard.bridge") || frame.asText().contains("$$ncclguard$$"),
                    "agent frame in " + leak);
            found |= frame.asText().startsWith(step);
        }
        assertTrue(found, step + " in " + leak);
    }
}
