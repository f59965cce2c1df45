package dev.ncclguard.cli;

import static dev.ncclguard.testkit.Texts.count;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The merge page's structure; its rendering is checked in Chromium by MergePageIT. */
class HtmlTimelineTest {
    private static final String ID = "9a87a0bcadf6c8e0";

    @TempDir
    Path dir;

    private String page(String... args) throws Exception {
        Path html = dir.resolve("out/merge.html");
        String[] all = new String[args.length + 3];
        all[0] = "merge";
        System.arraycopy(args, 0, all, 1, args.length);
        all[args.length + 1] = "--html";
        all[args.length + 2] = html.toString();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        Cli.run(all, new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        assertEquals("", err.toString(StandardCharsets.UTF_8));
        return Files.readString(html);
    }

    /** The big job of issue 19: 8 ranks in 8 processes, 300 communicators, one left alive by rank 5. */
    static void bigJob(Path dir) throws Exception {
        for (int rank = 0; rank < 8; rank++) {
            TestReports r = TestReports.process(4000 + rank, "node-" + rank / 4).writtenAt(3_611_000 + rank);
            for (int c = 0; c < 300; c++) {
                long created = 1_000L + c * 12_000L + rank;
                boolean leaked = c == 217 && rank == 5;
                r.comm(String.format("%016x", 0xc0ffee0000L + c), rank, 8, 0x7f0000001000L + c * 0x100L + rank,
                        created, leaked ? 0 : created + 5_000 + rank * 3);
            }
            r.write(dir, "rank-" + rank + ".json");
        }
    }

    @Test
    void thePageIsOneSelfContainedFileWithTheLeakMarked() throws Exception {
        TestReports.process(101, "node-a").comm(ID, 0, 2, 0x10, 100, 900).write(dir, "rank-0.json");
        TestReports.process(102, "node-a").comm(ID, 1, 2, 0x20, 120, 0).write(dir, "rank-1.json");
        String page = page(dir.resolve("rank-0.json").toString(), dir.resolve("rank-1.json").toString());
        assertTrue(page.startsWith("<!DOCTYPE html>"), page);
        assertTrue(page.contains("<section class=\"comm leaked\" id=\"c-" + ID + "\" data-comm-id=\"" + ID
                + "\" data-state=\"leaked\">"), page);
        assertTrue(page.contains("<div class=\"rank-row\" data-rank=\"1\" data-pid=\"102\" data-state=\"leaked\">"), page);
        assertTrue(page.contains("<div class=\"rank-row\" data-rank=\"0\" data-pid=\"101\" data-state=\"released\">"), page);
        assertFalse(page.contains("<script") || page.contains("src=") || page.contains("@import") || page.contains("url("),
                "nothing to fetch: " + page);
        Matcher links = Pattern.compile("href=\"([^\"]*)\"").matcher(page);
        while (links.find()) {
            assertTrue(links.group(1).startsWith("#"), "only anchors within the page: " + links.group(1));
        }
    }

    @Test
    void leakedCommunicatorsComeFirstOpenAndReleasedOnesFollowCollapsed() throws Exception {
        TestReports.process(101, "a").comm("00000000000000a1", 0, 1, 0x10, 100, 200)
                .comm("00000000000000a2", 0, 1, 0x11, 300, 0).comm("00000000000000a3", 0, 1, 0x12, 400, 500)
                .write(dir, "r.json");
        String page = page(dir.resolve("r.json").toString());
        int leaked = page.indexOf("<section class=\"comm leaked\" id=\"c-00000000000000a2\"");
        int first = page.indexOf("<details class=\"comm\" id=\"c-00000000000000a1\"");
        int third = page.indexOf("<details class=\"comm\" id=\"c-00000000000000a3\"");
        assertTrue(leaked > 0 && first > leaked && third > first, page);
        int index = page.indexOf("<nav id=\"index\">");
        assertTrue(index > 0 && index < leaked, "the index comes before the communicators");
        assertTrue(page.substring(index, leaked).contains("<li class=\"leaked\"><a href=\"#c-00000000000000a2\">"), page);
        assertTrue(page.substring(index, leaked).contains("<a href=\"#c-00000000000000a1\">"), page);
    }

    @Test
    void eachCommunicatorsAxisRunsFromItsCreationToItsLastEndWithRoundTicks() throws Exception {
        // a 5-second communicator in a job of an hour: its own axis, 0 to +5 s, ticks a second apart
        TestReports.process(101, "a").comm(ID, 0, 1, 0x10, 3_000_000, 3_005_000).write(dir, "r.json");
        String page = page(dir.resolve("r.json").toString());
        String section = page.substring(page.indexOf("id=\"c-" + ID + "\""));
        assertTrue(section.contains("<span class=\"l\">from +3000.000s</span>"), section);
        for (String tick : new String[] {">0<", ">+1 s<", ">+2 s<", ">+5 s<"}) {
            assertTrue(section.contains(tick), tick + " in " + section);
        }
        assertTrue(section.contains("class=\"bar released\" style=\"left:0%;width:100%\""), section);
        assertEquals("+1.5 s", HtmlTimeline.tick(1500, 500));
        assertEquals("+250 ms", HtmlTimeline.tick(250, 50));
        assertEquals("+4 min", HtmlTimeline.tick(240_000, 60_000));
        assertEquals("+2 h 30 min", HtmlTimeline.tick(9_000_000, 1_800_000));
        assertEquals(1000, HtmlTimeline.step(5000));
        assertEquals(200_000, HtmlTimeline.step(1_000_000));
    }

    @Test
    void aRankWithoutAReportHasARowThatSaysWhatTheOtherRanksReport() throws Exception {
        Path r0 = TestReports.process(101, "a").comm(ID, 0, 2, 0x10, 100, 5900).write(dir, "r0.json");
        TestReports.releaseStartedAt(r0, 0x10, 700);
        String page = page(r0.toString());
        assertTrue(page.contains("<section class=\"comm missing\" id=\"c-" + ID + "\""), page);
        assertTrue(page.contains("<div class=\"rank-row missing\" data-rank=\"1\" data-state=\"missing\">"
                + "<span class=\"l\">rank 1 · no report</span>"), page);
        assertTrue(page.contains("rank 1 wrote no report: rank 0 (pid 101 on a) lists the communicator with 2 ranks;"
                + " rank 0&#39;s ncclCommDestroy waited 5.20 s"), page);
        assertTrue(page.contains("<i class=\"wait\" style=\"left:10.3%;width:89.7%\" title=\"ncclCommDestroy waited"
                + " 5.20 s\"></i>"), page);
        assertTrue(page.contains("<span class=\"wait-label\">waited 5.20 s</span>"), page);
    }

    @Test
    void theFullCreatingStackIsThereOnDemand() throws Exception {
        TestReports.process(101, "a").comm(ID, 0, 1, 0x10, 100, 0).write(dir, "r.json");
        String page = page(dir.resolve("r.json").toString());
        assertTrue(page.contains("<details class=\"stack\"><summary><code>com.example.Trainer.init(Trainer.java:42)"
                + "</code></summary><pre>at com.example.Trainer.init(Trainer.java:42)\n</pre></details>"), page);
    }

    @Test
    void eventsAndStreamsLeftBehindAreMarksOnTheirProcessesRowsAndATable() throws Exception {
        TestReports.process(101, "a").comm(ID, 0, 1, 0x10, 100, 0).event(0x30, 5_100).event(0x31, 5_100)
                .write(dir, "r.json");
        String page = page(dir.resolve("r.json").toString());
        assertTrue(page.contains("<i class=\"mark\" style=\"left:50%\" title=\"2 events or streams created here and left"
                + " behind\"></i>"), page);
        assertTrue(page.contains("<section class=\"others\" id=\"work\">"), page);
        assertEquals(2, count(page, "<tr class=\"leaked\" data-kind=\"event\">"), page);
    }

    @Test
    void htmlEscapesWhatTheReportsHold() throws Exception {
        TestReports.process(101, "<img src=x onerror=alert(1)>").comm("\"><script>", 0, 1, 0x10, 100, 0)
                .writeUnvalidated(dir, "r.json");
        String page = page(dir.resolve("r.json").toString());
        assertFalse(page.contains("<img") || page.contains("<script>"), page);
        assertTrue(page.contains("&lt;img src=x onerror=alert(1)&gt;"), page);
        assertTrue(page.contains("id=\"c-___script_\""), "an id of safe characters: " + page);
    }

    @Test
    void theBigJobOfEightRanksAndThreeHundredCommunicatorsStaysUnderAMegabyte() throws Exception {
        bigJob(dir);
        String page = page(dir.toString());
        assertTrue(page.length() < 1_000_000, page.length() + " bytes");
        assertEquals(1, count(page, "<section class=\"comm leaked\""));
        assertEquals(299, count(page, "<details class=\"comm\""));
        assertTrue(page.indexOf("<section class=\"comm leaked\"") < page.indexOf("<details class=\"comm\""));
        assertEquals(2400, count(page, "<div class=\"rank-row\""));
    }
}
