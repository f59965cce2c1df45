package dev.ncclguard.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** multi-rank: one JVM per rank against the emulator's ranks in separate processes. */
class MultiRankTest {
    @TempDir
    Path dir;

    private SampleRun run(String... args) throws Exception {
        return SampleRun.of(Map.of("NCCLEMU_REPORT", dir.resolve("alive-%p.txt").toString()), args);
    }

    /** Every rank process's NCCLEMU_REPORT lines, all together. */
    private List<String> aliveInRanks() throws Exception {
        List<String> alive = new ArrayList<>();
        try (Stream<Path> files = Files.list(dir)) {
            for (Path f : files.filter(p -> p.getFileName().toString().startsWith("alive-")).toList()) {
                alive.addAll(Files.readAllLines(f));
            }
        }
        return alive;
    }

    private static void assertEveryRankChecked(SampleRun run, int nranks) {
        for (int r = 0; r < nranks; r++) {
            String line = "[rank " + r + "] rank " + r + " (device " + r + "): 5 allreduces of 1024 floats, results correct";
            assertTrue(run.stdout.contains(line), "missing '" + line + "'\n" + run);
            assertTrue(run.stdout.matches("(?s).*samples: multi-rank: rank " + r + " \\(pid \\d+\\) exited 0, \\d+ ms after .*"),
                    run.toString());
        }
    }

    @Test
    void leakyRanksExitWithTheirCommunicatorsAliveAndTheLastOnesComplainAboutTheFirst() throws Exception {
        SampleRun run = run("multi-rank", "--ranks", "3");
        assertEquals(0, run.exitCode, run.toString());
        assertEveryRankChecked(run, 3);
        assertTrue(run.stdout.contains("samples: multi-rank: every rank exited 0"), run.toString());
        List<String> comms = aliveInRanks().stream().filter(l -> l.startsWith("comm ")).toList();
        assertEquals(3, comms.size(), comms + "\n" + run);
        // whoever exits last sees the connections of the others close without a goodbye
        assertTrue(run.stderr.matches("(?s).*NCCL WARN \\[Service thread\\] Connection closed by localRank \\d\n.*"),
                run.toString());
    }

    @Test
    void cleanRanksDestroyTogetherAndNobodyComplains() throws Exception {
        SampleRun run = run("multi-rank", "--ranks", "2", "--then", "clean");
        assertEquals(0, run.exitCode, run.toString());
        assertEveryRankChecked(run, 2);
        assertTrue(run.stdout.contains("[rank 1] rank 1: communicator destroyed, stream and buffers freed"), run.toString());
        assertFalse(run.stderr.contains("NCCL WARN"), run.toString());
        assertEquals(List.of(), aliveInRanks(), run.toString());
    }

    @Test
    void aRankKilledWithSigkillIsReportedByTheSurvivors() throws Exception {
        SampleRun run = run("multi-rank", "--ranks", "2", "--kill", "1");
        assertEquals(0, run.exitCode, run.toString());
        assertTrue(run.stdout.matches("(?s).*samples: multi-rank: rank 1 \\(pid \\d+\\) killed with SIGKILL.*"), run.toString());
        assertTrue(run.stdout.matches("(?s).*samples: multi-rank: rank 0 \\(pid \\d+\\) exited 0.*"), run.toString());
        assertTrue(run.stderr.contains("[rank 0] ") && run.stderr.contains(
                "NCCL WARN [Service thread] Connection closed by localRank 1"), run.toString());
    }

    @Test
    void badArgumentsExit2WithTheUsage() throws Exception {
        SampleRun run = run("multi-rank", "--ranks", "1");
        assertEquals(2, run.exitCode, run.toString());
        assertTrue(run.stderr.contains("multi-rank needs at least 2"), run.toString());
        assertTrue(run.stderr.contains(MultiRank.USAGE), run.toString());
    }

    @Test
    void argumentsAreChecked() {
        assertEquals("clean", MultiRank.parse(new String[] {"multi-rank", "--then", "clean"}).then());
        assertTrue(MultiRank.parse(new String[] {"multi-rank"}).launcher());
        assertThrows(IllegalArgumentException.class, () -> MultiRank.parse(new String[] {"multi-rank", "--then", "x"}));
        assertThrows(IllegalArgumentException.class, () -> MultiRank.parse(new String[] {"multi-rank", "--kill", "2"}));
        assertThrows(IllegalArgumentException.class, () -> MultiRank.parse(new String[] {"multi-rank", "--rank", "0"}));
    }
}
