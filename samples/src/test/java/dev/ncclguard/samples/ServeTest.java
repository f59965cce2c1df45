package dev.ncclguard.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The serve scenario: commands on stdin, taken in order, one per iteration. */
class ServeTest {
    private static List<String> alive(SampleRun run, String kind) {
        assertNotNull(run.aliveAtExit, "the emulator wrote no NCCLEMU_REPORT\n" + run);
        return run.aliveAtExit.lines().filter(line -> line.startsWith(kind + " ")).toList();
    }

    @Test
    void leakLeavesOneCommunicatorAndOneEventPerRankAndStopReleasesTheRest() throws Exception {
        SampleRun run = SampleRun.withInput("leak\nstop\n", "serve");
        assertEquals(0, run.exitCode, run.toString());
        assertTrue(run.stdout.contains("serve: ready, pid "), run.toString());
        assertTrue(run.stdout.contains("serve: leaked: the ranks joined a communicator"), run.toString());
        assertTrue(run.stdout.contains("rank 0 (device 0): ") && run.stdout.contains("rank 1 (device 1): ")
                && run.stdout.contains("results correct"), run.toString());
        assertEquals(2, alive(run, "comm").size(), run.toString());
        assertEquals(2, alive(run, "event").size(), run.toString());
    }

    @Test
    void endOfInputStopsItCleanly() throws Exception {
        SampleRun run = SampleRun.withInput("", "serve");
        assertEquals(0, run.exitCode, run.toString());
        assertTrue(run.stdout.contains("serve: stopping after "), run.toString());
        assertEquals(List.of(), alive(run, "comm"), run.toString());
        assertEquals(List.of(), alive(run, "event"), run.toString());
    }
}
