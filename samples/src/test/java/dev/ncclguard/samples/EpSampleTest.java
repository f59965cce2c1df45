package dev.ncclguard.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The DeepEP-style runtime's scenarios in a child JVM against the emulator, without the agent. */
class EpSampleTest {
    @BeforeAll
    static void emulatorIsBuilt() {
        SampleRun.emulator();
    }

    private static List<String> alive(SampleRun run, String kind) {
        assertNotNull(run.aliveAtExit, "the emulator wrote no NCCLEMU_REPORT\n" + run);
        return run.aliveAtExit.lines().filter(line -> line.startsWith(kind + " ")).collect(Collectors.toList());
    }

    @Test
    void cleanChecksItsResultsAndLeavesNothingAlive() throws Exception {
        SampleRun run = SampleRun.of(Map.of(), "ep-clean");
        assertEquals(0, run.exitCode, run.toString());
        for (int r = 0; r < 2; r++) {
            assertTrue(run.stdout.contains("rank " + r + " (device " + r + "): 5 steps of 1024 floats, results correct"),
                    run.toString());
        }
        assertEquals(List.of(), alive(run, "comm"), run.toString());
        assertEquals(List.of(), alive(run, "event"), run.toString());
        assertEquals(List.of(), alive(run, "stream"), run.toString());
    }

    @Test
    void leakyLeavesACommunicatorAStreamAndAnEventPerRankMadeInC() throws Exception {
        SampleRun run = SampleRun.of(Map.of(), "ep-leaky");
        assertEquals(0, run.exitCode, run.toString());
        assertEquals(2, alive(run, "comm").size(), run.toString());
        assertEquals(2, alive(run, "event").size(), run.toString());
        assertEquals(2, alive(run, "stream").size(), run.toString());
    }

    @Test
    void pthreadMakesTheCommunicatorOnALibraryThreadAndLeavesTheSame() throws Exception {
        SampleRun run = SampleRun.of(Map.of(), "ep-pthread", "--ranks", "1");
        assertEquals(0, run.exitCode, run.toString());
        assertEquals(1, alive(run, "comm").size(), run.toString());
        assertEquals(1, alive(run, "event").size(), run.toString());
    }

    @Test
    void aFailedCallInTheRuntimeNamesItAndExitsOne() throws Exception {
        SampleRun run = SampleRun.of(Map.of("NCCLEMU_FAIL", "ncclAllReduce=ncclSystemError"), "ep-clean", "--ranks", "1");
        assertEquals(1, run.exitCode, run.toString());
        assertTrue(run.stderr.contains("ncclAllReduce"), run.toString());
    }
}
