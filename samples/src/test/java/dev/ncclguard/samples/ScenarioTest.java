package dev.ncclguard.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Each scenario in a child JVM against the emulator: exit status, output, and what was alive at exit. */
class ScenarioTest {
    private static Path emu;

    @BeforeAll
    static void emulatorIsBuilt() {
        emu = SampleRun.emulator();
    }

    private static SampleRun run(String... args) throws Exception {
        return SampleRun.of(Map.of(), args);
    }

    /** The emulator's lines for handles of this kind still alive at exit ("comm 0x... rank 0 ..."). */
    private static List<String> alive(SampleRun run, String kind) {
        assertNotNull(run.aliveAtExit, "the emulator wrote no NCCLEMU_REPORT\n" + run);
        return run.aliveAtExit.lines().filter(line -> line.startsWith(kind + " ")).collect(Collectors.toList());
    }

    private static void assertResultsCorrectOnRanks(SampleRun run, int nranks, int iterations, int count) {
        for (int r = 0; r < nranks; r++) {
            String line = "rank " + r + " (device " + r + "): " + iterations + " allreduces of " + count
                    + " floats, results correct";
            assertTrue(run.stdout.contains(line), "missing '" + line + "'\n" + run);
        }
        assertEquals(nranks, run.stdout.lines().filter(l -> l.endsWith("results correct")).count(), run.toString());
    }

    private static void assertNothingAlive(SampleRun run) {
        assertEquals(List.of(), alive(run, "comm"), run.toString());
        assertEquals(List.of(), alive(run, "event"), run.toString());
        assertEquals(List.of(), alive(run, "stream"), run.toString());
    }

    @Test
    void cleanChecksItsResultsAndLeavesNothingAlive() throws Exception {
        SampleRun run = run("clean");
        assertEquals(0, run.exitCode, run.toString());
        assertResultsCorrectOnRanks(run, 2, 5, 1024);
        assertNothingAlive(run);
    }

    @Test
    void theLoadedLibrariesAreTheEmulatorsAndAreNamedFirst() throws Exception {
        SampleRun run = run("clean", "--ranks", "1");
        String first = run.stdout.lines().findFirst().orElse("");
        assertEquals("samples: nccl = " + emu.toAbsolutePath().resolve("libnccl.so.2") + " (emulator), cudart = "
                + emu.toAbsolutePath().resolve("libcudart.so.13") + " (emulator)", first, run.toString());
        assertTrue(run.stdout.lines().skip(1).findFirst().orElse("").matches("samples: NCCL 2\\.\\d+\\.\\d+, \\d+ CUDA devices; .*"),
                run.toString());
    }

    @Test
    void aLibncclLoadableBySonameIsUsedWithTheCudartFoundTheSameWay() throws Exception {
        // The emulator on the loader's path stands in for a system NCCL; the emulator folder given is empty.
        SampleRun run = SampleRun.withEmulator("/nonexistent/emu", Map.of("LD_LIBRARY_PATH", emu.toAbsolutePath().toString()),
                "clean", "--ranks", "1");
        assertEquals(0, run.exitCode, run.toString());
        assertEquals("samples: nccl = " + emu.toAbsolutePath().resolve("libnccl.so.2") + " (system), cudart = "
                + emu.toAbsolutePath().resolve("libcudart.so.13") + " (system)", run.stdout.lines().findFirst().orElse(""),
                run.toString());
        assertResultsCorrectOnRanks(run, 1, 5, 1024);
    }

    @Test
    void leakyChecksItsResultsAndLeavesCommunicatorsEventsAndStreamsAlive() throws Exception {
        SampleRun run = run("leaky");
        assertEquals(0, run.exitCode, run.toString());
        assertResultsCorrectOnRanks(run, 2, 5, 1024);
        List<String> comms = alive(run, "comm");
        assertEquals(2, comms.size(), run.toString());
        assertTrue(comms.stream().anyMatch(l -> l.contains(" rank 0 nranks 2 device 0")), run.toString());
        assertTrue(comms.stream().anyMatch(l -> l.contains(" rank 1 nranks 2 device 1")), run.toString());
        assertEquals(2, alive(run, "event").size(), run.toString());
        assertEquals(2, alive(run, "stream").size(), run.toString());
    }

    @Test
    void destroyInHookReleasesEverythingInTheApplicationsShutdownHook() throws Exception {
        SampleRun run = run("destroy-in-hook");
        assertEquals(0, run.exitCode, run.toString());
        assertResultsCorrectOnRanks(run, 2, 5, 1024);
        assertTrue(run.stdout.contains("rank 0: communicator destroyed in the shutdown hook"), run.toString());
        assertTrue(run.stdout.contains("rank 1: communicator destroyed in the shutdown hook"), run.toString());
        assertNothingAlive(run);
    }

    @Test
    void pendingExitsWithItsAllreducesAndEventStillRunning() throws Exception {
        // 5 ops of 2 s each per stream: the JVM is long gone before the first one ends.
        SampleRun run = SampleRun.of(Map.of("NCCLEMU_OP_DELAY_US", "2000000"), "pending");
        assertEquals(0, run.exitCode, run.toString());
        assertTrue(run.stdout.contains("rank 0: 5 allreduces of 1024 floats and an event enqueued; not waiting"), run.toString());
        assertEquals(2, alive(run, "comm").size(), run.toString());
        List<String> events = alive(run, "event");
        assertEquals(2, events.size(), run.toString());
        assertTrue(events.stream().allMatch(l -> l.endsWith(" pending 1")), run.toString());
        List<String> streams = alive(run, "stream");
        assertEquals(2, streams.size(), run.toString());
        Pattern pending = Pattern.compile(" pending (\\d+)$");
        for (String stream : streams) {
            Matcher m = pending.matcher(stream);
            assertTrue(m.find() && Long.parseLong(m.group(1)) > 0, "no work pending on " + stream + "\n" + run);
        }
    }

    @Test
    void initAllCreatesTheCommunicatorsThatTheRankThreadsUse() throws Exception {
        SampleRun run = run("clean", "--init", "all", "--ranks", "4");
        assertEquals(0, run.exitCode, run.toString());
        assertTrue(run.stdout.contains("on 4 ranks, 5 allreduces of 1024 floats, communicators by ncclCommInitAll"),
                run.toString());
        assertResultsCorrectOnRanks(run, 4, 5, 1024);
        assertNothingAlive(run);
    }

    @Test
    void leakyWithInitAllLeavesEveryCommunicatorAlive() throws Exception {
        SampleRun run = run("leaky", "--init", "all", "--ranks", "3");
        assertEquals(0, run.exitCode, run.toString());
        assertResultsCorrectOnRanks(run, 3, 5, 1024);
        assertEquals(3, alive(run, "comm").size(), run.toString());
    }

    @Test
    void aCountLargerThanTheStagingBufferIsCopiedAndCheckedInFull() throws Exception {
        int count = 3 * (1 << 20) + 123; // three full staging chunks and a partial one
        SampleRun run = run("clean", "--count", String.valueOf(count), "--iters", "2");
        assertEquals(0, run.exitCode, run.toString());
        assertResultsCorrectOnRanks(run, 2, 2, count);
    }

    @Test
    void ranksAreCappedAtTheDeviceCount() throws Exception {
        SampleRun run = SampleRun.of(Map.of("NCCLEMU_DEVICES", "3"), "clean", "--ranks", "8");
        assertEquals(0, run.exitCode, run.toString());
        assertTrue(run.stdout.contains("3 CUDA devices; clean on 3 ranks"), run.toString());
        assertResultsCorrectOnRanks(run, 3, 5, 1024);
    }

    @Test
    void aFailedNcclCallExits1NamingTheCallAndNcclsErrorString() throws Exception {
        SampleRun run = SampleRun.of(Map.of("NCCLEMU_FAIL", "ncclAllReduce:3=5"), "clean");
        assertEquals(1, run.exitCode, run.toString());
        assertTrue(run.stderr.matches("(?s).*samples: FAILED: rank [01]: ncclAllReduce failed: invalid usage.* \\(5\\)\n.*"),
                run.toString());
    }

    @Test
    void aFailedCudaCallExits1NamingTheCallAndCudasErrorString() throws Exception {
        SampleRun run = SampleRun.of(Map.of("NCCLEMU_FAIL", "cudaEventSynchronize=2"), "clean");
        assertEquals(1, run.exitCode, run.toString());
        assertTrue(run.stderr.contains("cudaEventSynchronize failed: out of memory (2)"), run.toString());
    }

    @Test
    void aMissingEmulatorExits1SayingWhereItLooked() throws Exception {
        SampleRun run = SampleRun.withEmulator("/nonexistent/emu", Map.of(), "clean");
        assertEquals(1, run.exitCode, run.toString());
        assertTrue(run.stderr.contains("no real NCCL on this system, and no emulator in /nonexistent/emu"), run.toString());
    }

    @Test
    void helpAndAnUnknownScenarioPrintTheUsageAndExit2() throws Exception {
        SampleRun help = run("--help");
        assertEquals(2, help.exitCode, help.toString());
        assertTrue(help.stdout.startsWith(Samples.USAGE + "\n"), help.toString());
        SampleRun unknown = run("leaking");
        assertEquals(2, unknown.exitCode, unknown.toString());
        assertEquals("samples: unknown scenario 'leaking'\n" + Samples.USAGE + "\n", unknown.stderr);
    }
}
