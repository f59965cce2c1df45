package dev.ncclguard.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.ncclguard.testkit.ReportJson;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class MergeCommandTest {
    private static final String ID = "9a87a0bcadf6c8e0";

    @TempDir
    Path dir;

    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final ByteArrayOutputStream err = new ByteArrayOutputStream();

    private int merge(String... args) {
        out.reset();
        err.reset();
        return Cli.run(CheckCommandTest.prepend("merge", args), new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
    }

    private String text() {
        return out.toString(StandardCharsets.UTF_8);
    }

    private String lastLine() {
        String[] lines = text().strip().split("\n");
        return lines[lines.length - 1];
    }

    /** Rank 0 in pid 101 released the communicator at +0.9 s; rank 1 in pid 102 exited with it alive. */
    private void oneRankLeaks() throws Exception {
        TestReports.process(101, "node-a").comm(ID, 0, 2, 0x10, 100, 900).write(dir, "rank-0.json");
        TestReports.process(102, "node-a").comm(ID, 1, 2, 0x20, 120, 0).write(dir, "rank-1.json");
    }

    @Test
    void perRankReportsAreJoinedByCommIdAndTheRankThatDidNotReleaseIsNamed() throws Exception {
        oneRankLeaks();
        assertEquals(1, merge(dir.toString()));
        String t = text();
        assertTrue(t.contains("communicator " + ID + ": ncclCommInitRank, 2 ranks; rank 1 did not release it, rank 0 did"), t);
        assertTrue(t.contains("  rank 0  pid 101 on node-a  device 0  0x10  created +0.100s  released +0.900s by ncclCommDestroy"), t);
        assertTrue(t.contains("  rank 1  pid 102 on node-a  device 1  0x20  created +0.120s  NOT RELEASED, alive at exit +10.000s, "
                + "created at com.example.Trainer.init(Trainer.java:42)"), t);
        assertTrue(t.contains("  => rank 1 (pid 102 on node-a) never released it: it causes the exit-time NCCL warnings of rank 0 "
                + "([Service thread] ... localRank 1, [Proxy Service] Failed to execute operation Close from rank 1)"), t);
        assertEquals("ncclguard merge: 1 of 1 communicators not released by every rank: rank 1 (pid 102 on node-a) for "
                + ID, lastLine());
    }

    @Test
    void everyRankReleasedIsClean() throws Exception {
        TestReports.process(101, "a").comm(ID, 0, 2, 0x10, 100, 900).write(dir, "r0.json");
        TestReports.process(102, "a").comm(ID, 1, 2, 0x20, 100, 950).write(dir, "r1.json");
        assertEquals(0, merge(dir.resolve("r0.json").toString(), dir.resolve("r1.json").toString()));
        assertTrue(text().contains("communicator " + ID + ": ncclCommInitRank, 2 ranks; released by every rank\n"), text());
        assertEquals("ncclguard merge: every communicator released by every rank", lastLine());
    }

    @Test
    void aRankWithoutAReportFailsTheMergeNamingTheRanksAndThePidsThatReported() throws Exception {
        TestReports.process(101, "a").comm(ID, 0, 4, 0x10, 100, 900).write(dir, "r0.json");
        TestReports.process(102, "a").comm(ID, 1, 4, 0x20, 100, 950).write(dir, "r1.json");
        assertEquals(1, merge(dir.toString()));
        assertTrue(text().contains("released by every rank reported; no report for rank 2, 3"), text());
        assertTrue(text().contains("  rank 2  no report\n  rank 3  no report\n"), text());
        assertTrue(text().contains("  => ranks 2, 3 wrote no report: rank 0 (pid 101 on a), rank 1 (pid 102 on a) list the"
                + " communicator with 4 ranks: a process killed (SIGKILL, a crash) or run without the agent writes none"), text());
        assertEquals("ncclguard merge: every communicator released by every rank that wrote a report; 1 communicator"
                + " names ranks without a report: " + ID + " (rank 2, 3)", lastLine());
    }

    @Test
    void allowMissingRanksListsThemWithoutFailing() throws Exception {
        TestReports.process(101, "a").comm(ID, 0, 2, 0x10, 100, 900).write(dir, "r0.json");
        assertEquals(0, merge(dir.toString(), "--allow-missing-ranks"));
        assertTrue(lastLine().endsWith("names ranks without a report (allowed by --allow-missing-ranks): " + ID
                + " (rank 1)"), lastLine());
    }

    @Test
    void whatTheOtherRanksSayOfAMissingRankIncludesADestroyThatWaited() throws Exception {
        Path r0 = TestReports.process(101, "a").comm(ID, 0, 2, 0x10, 100, 5900).write(dir, "r0.json");
        TestReports.releaseStartedAt(r0, 0x10, 700);
        assertEquals(1, merge(r0.toString()));
        assertTrue(text().contains("released +5.900s by ncclCommDestroy (it waited 5.20 s)"), text());
        assertTrue(text().contains("=> rank 1 wrote no report: rank 0 (pid 101 on a) lists the communicator with 2 ranks;"
                + " rank 0's ncclCommDestroy waited 5.20 s: a process killed"), text());
    }

    @Test
    void reportWithoutACommunicatorsListStillShowsItsLeaksAndCannotProveARankMissing() throws Exception {
        Path r1 = TestReports.process(102, "a").comm(ID, 1, 2, 0x20, 120, 0).write(dir, "old.json");
        String json = Files.readString(r1);
        Files.writeString(r1, json.substring(0, json.indexOf(",\n  \"suppressed\"")) + "\n}\n");
        TestReports.process(101, "a").comm(ID, 0, 2, 0x10, 100, 900).write(dir, "new.json");
        assertEquals(1, merge(dir.toString()));
        assertTrue(text().contains("note: " + r1 + " (pid 102 on a, agent test) has no communicators list: "
                + "only its leaked communicators are known"), text());
        assertTrue(text().contains("rank 1 did not release it, rank 0 did"), text());
    }

    @Test
    void aCopyOfAReportUnderAnotherNameIsReadOnce() throws Exception {
        oneRankLeaks();
        Files.copy(dir.resolve("rank-1.json"), dir.resolve("rank-1-copy.json"));
        merge(dir.toString());
        assertTrue(text().contains("note: " + dir.resolve("rank-1.json") + " is the same report as "
                + dir.resolve("rank-1-copy.json") + " (pid 102 on node-a): read once"), text());
        assertEquals(1, text().lines().filter(l -> l.startsWith("  rank 1  ")).count(), text());
    }

    @Test
    void unreadableReportIsNamedAndFails() throws Exception {
        TestReports.process(101, "a").comm(ID, 0, 1, 0x10, 100, 900).write(dir, "r0.json");
        Files.writeString(dir.resolve("r1.json"), "{\"schema\": \"ncclguard-report/1\", \"pid\": 1");
        assertEquals(1, merge(dir.toString()));
        assertTrue(text().contains("BAD   " + dir.resolve("r1.json") + ": truncated or malformed JSON"), text());
        assertEquals("ncclguard merge: every communicator released by every rank; 1 report unreadable", lastLine());
    }

    @Test
    void unreadableInputsAloneNeverSayEveryCommunicatorReleased() throws Exception {
        Path readme = Files.writeString(dir.resolve("README.md"), "# not a report\n");
        assertEquals(1, merge(readme.toString()));
        assertFalse(text().contains("every communicator released"), text());
        assertEquals("ncclguard merge: FAILED: no report could be read (1 input unreadable): nothing to merge", lastLine());
    }

    @Test
    void aFifoAmongTheInputsIsRefusedInOneLine() throws Exception {
        Path fifo = Fifos.make(dir.resolve("r.json"));
        assertEquals(2, merge(fifo.toString()));
        assertEquals("ncclguard merge: " + fifo + " is a FIFO, not a regular file: reports are read from regular files\n",
                err.toString(StandardCharsets.UTF_8));
    }

    @Test
    void jsonHoldsTheVerdictAndEachRanksPartWithItsStack() throws Exception {
        oneRankLeaks();
        TestReports.process(103, "node-b").comm("00000000000000ff", 0, 2, 0x30, 150, 800).write(dir, "other.json");
        Path file = dir.resolve("out/merge.json");
        assertEquals(1, merge(dir.toString(), "--json", file.toString()));
        assertTrue(text().contains("ncclguard merge: JSON written to " + file), text());
        JsonNode json = ReportJson.tree(file);
        assertEquals("ncclguard-merge/1", json.path("schema").asText());
        assertTrue(json.path("verdict").path("failed").asBoolean());
        assertEquals(1, json.path("verdict").path("leakedCommunicators").asInt());
        assertEquals(1, json.path("verdict").path("communicatorsMissingRanks").asInt());
        assertEquals(3, json.path("reports").size());
        JsonNode leaked = json.path("communicators").get(0);
        assertEquals(ID, leaked.path("commId").asText());
        assertEquals("leaked", leaked.path("state").asText());
        JsonNode rank1 = leaked.path("ranks").get(1);
        assertEquals(102, rank1.path("pid").asInt());
        assertTrue(rank1.path("leaked").asBoolean());
        assertEquals("com.example.Trainer.init(Trainer.java:42)", rank1.path("stack").get(0).asText());
        JsonNode other = json.path("communicators").get(1);
        assertEquals("[1]", other.path("missingRanks").toString());
    }

    @Test
    void everyFileMergeWritesGoesToItsPlaceWhole() throws Exception {
        oneRankLeaks();
        Path html = dir.resolve("m.html");
        Path trace = dir.resolve("m.trace.json");
        assertEquals(1, merge(dir.toString(), "--html", html.toString(), "--trace", trace.toString()));
        try (var files = Files.list(dir)) {
            assertEquals(0, files.filter(p -> p.getFileName().toString().endsWith(".tmp")).count());
        }
        assertTrue(Files.readString(html).endsWith("</html>\n"));
        ReportJson.tree(trace);
    }

    @Test
    void aReportOfAnAttachMakesTheVerdictPartial() throws Exception {
        TestReports.process(101, "node-a").attached(50, 1, 1).comm(ID, 0, 1, 0x10, 100, 900).write(dir, "rank-0.json");
        assertEquals(0, merge(dir.toString()));
        assertEquals("ncclguard merge: every communicator released by every rank (partial: tracked since"
                + " 2026-05-28T20:26:40.050Z, attached; 1 communicator existed before (NCCL RAS))", lastLine());
    }
}
