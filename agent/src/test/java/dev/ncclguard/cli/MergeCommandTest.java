package dev.ncclguard.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

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
        String[] all = new String[args.length + 1];
        all[0] = "merge";
        System.arraycopy(args, 0, all, 1, args.length);
        return Cli.run(all, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
    }

    private String text() {
        return out.toString(StandardCharsets.UTF_8);
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
        assertTrue(t.strip().endsWith("ncclguard merge: 1 of 1 communicators not released by every rank: "
                + "rank 1 (pid 102 on node-a) for " + ID), t);
    }

    @Test
    void everyRankReleasedIsClean() throws Exception {
        TestReports.process(101, "a").comm(ID, 0, 2, 0x10, 100, 900).write(dir, "r0.json");
        TestReports.process(102, "a").comm(ID, 1, 2, 0x20, 100, 950).write(dir, "r1.json");
        assertEquals(0, merge(dir.resolve("r0.json").toString(), dir.resolve("r1.json").toString()));
        assertTrue(text().contains("communicator " + ID + ": ncclCommInitRank, 2 ranks; released by every rank\n"), text());
        assertTrue(text().strip().endsWith("ncclguard merge: every communicator released by every rank"), text());
    }

    @Test
    void ranksWithoutAReportAreListed() throws Exception {
        TestReports.process(101, "a").comm(ID, 0, 4, 0x10, 100, 900).write(dir, "r0.json");
        TestReports.process(102, "a").comm(ID, 1, 4, 0x20, 100, 950).write(dir, "r1.json");
        merge(dir.toString());
        assertTrue(text().contains("released by every rank reported; no report for rank 2, 3"), text());
        assertTrue(text().contains("  rank 2  no report\n  rank 3  no report\n"), text());
    }

    @Test
    void reportWithoutACommunicatorsListStillShowsItsLeaks() throws Exception {
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
    }

    @Test
    void htmlPageIsOneSelfContainedFileWithTheLeakMarked() throws Exception {
        oneRankLeaks();
        Path html = dir.resolve("out/merge.html");
        merge(dir.toString(), "--html", html.toString());
        String page = Files.readString(html);
        assertTrue(page.startsWith("<!DOCTYPE html>"), page);
        assertTrue(page.contains("<section class=\"comm leaked\" data-comm-id=\"" + ID + "\" data-state=\"leaked\">"), page);
        assertTrue(page.contains("<g class=\"rank-row\" data-rank=\"1\" data-pid=\"102\" data-state=\"leaked\">"), page);
        assertTrue(page.contains("<g class=\"rank-row\" data-rank=\"0\" data-pid=\"101\" data-state=\"released\">"), page);
        assertFalse(page.contains("<script") || page.contains("src=") || page.contains("href=") || page.contains("@import")
                || page.contains("url("), "nothing to fetch: " + page);
        assertTrue(text().contains("ncclguard merge: timeline written to " + html), text());
    }

    @Test
    void htmlEscapesWhatTheReportsHold() throws Exception {
        TestReports.process(101, "<img src=x onerror=alert(1)>").comm("\"><script>", 0, 1, 0x10, 100, 0)
                .write(dir, "r.json");
        Path html = dir.resolve("m.html");
        merge(dir.resolve("r.json").toString(), "--html=" + html);
        String page = Files.readString(html);
        assertFalse(page.contains("<img") || page.contains("<script>"), page);
        assertTrue(page.contains("&lt;img src=x onerror=alert(1)&gt;"), page);
    }

    @Test
    void usageErrors() {
        assertEquals(2, merge());
        assertEquals(2, merge("a.json", "--html"));
        assertEquals(2, merge("a.json", "--pdf"));
        assertTrue(err.toString(StandardCharsets.UTF_8).contains("unknown option --pdf"));
    }
}
