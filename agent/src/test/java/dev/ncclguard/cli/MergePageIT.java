package dev.ncclguard.cli;

import static dev.ncclguard.testkit.Images.pixels;
import static dev.ncclguard.testkit.Texts.count;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ncclguard.testkit.Chromium;
import dev.ncclguard.testkit.Images;
import java.awt.image.BufferedImage;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The merge page of a big job (8 ranks x 300 communicators, one left alive) in headless Chromium:
 * the leaked communicator at the top, open, its bars drawn; the released ones collapsed; the whole
 * page opened about as fast as a page of one communicator.
 */
class MergePageIT {
    /** Where the rendered pages stay after the build, for a person to look at. */
    private static final Path KEPT = Path.of("target", "ci-html");
    private static final int LEAKED_RGB = 0xd32f2f;
    private static final int RELEASED_RGB = 0x2e7d32;

    @TempDir
    Path dir;

    private static void merge(Path reports, Path html) {
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        Cli.run(new String[] {"merge", reports.toString(), "--html", html.toString()},
                new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        assertEquals("", err.toString(StandardCharsets.UTF_8));
    }

    @Test
    void theBigJobsPageShowsItsOneLeakFirstAndKeepsTheRestCollapsed() throws Exception {
        Path big = Files.createDirectories(dir.resolve("big"));
        HtmlTimelineTest.bigJob(big);
        Path bigPage = KEPT.resolve("merge-8x300.html");
        merge(big, bigPage);
        long bytes = Files.size(bigPage);
        assertTrue(bytes < 1_000_000, bytes + " bytes");

        Path png = KEPT.resolve("merge-8x300.png");
        Chromium.Result r = Chromium.render(bigPage, 1100, 900, png);
        String dom = r.dom();
        assertTrue(dom.contains("1 of 300 communicators not released by every rank."), dom.length() + r.err());
        assertEquals(1, count(dom, "<section class=\"comm leaked\""));
        assertEquals(299, count(dom, "<details class=\"comm\""));
        assertEquals(0, count(dom, "<details class=\"comm\" open"), "released ones stay collapsed");
        assertTrue(dom.contains("data-rank=\"5\" data-pid=\"4005\" data-state=\"leaked\""), "rank 5 of pid 4005");
        assertTrue(dom.indexOf("<section class=\"comm leaked\"") < dom.indexOf("<details class=\"comm\""));

        BufferedImage shot = Images.read(png);
        // the leaked rank's bar (alive until exit: 640 px x 14) in the first screen, and the seven ranks
        // that released it after 5 s of its 1,000 s drawn green at their narrowest (2 px x 14 each)
        assertTrue(pixels(shot, LEAKED_RGB) > 5_000, "leaked bar drawn red: " + pixels(shot, LEAKED_RGB));
        assertTrue(pixels(shot, RELEASED_RGB) >= 7 * 2 * 14, "its released ranks drawn green: " + pixels(shot, RELEASED_RGB));
    }

    @Test
    void aMissingRankAndAWaitingDestroyAreDrawn() throws Exception {
        Path r0 = TestReports.process(101, "a").comm("9a87a0bcadf6c8e0", 0, 2, 0x10, 100, 5900).write(dir, "r0.json");
        TestReports.releaseStartedAt(r0, 0x10, 700);
        Path page = KEPT.resolve("merge-missing.html");
        merge(r0, page);
        Path png = KEPT.resolve("merge-missing.png");
        Chromium.Result r = Chromium.render(page, 1100, 700, png);
        assertTrue(r.dom().contains("<div class=\"rank-row missing\" data-rank=\"1\" data-state=\"missing\">"), r.dom());
        BufferedImage shot = Images.read(png);
        assertTrue(pixels(shot, 0xf9a825) > 3_000, "the destroy's wait drawn amber: " + pixels(shot, 0xf9a825));
        assertTrue(pixels(shot, 0x9e9e9e) > 1_000, "the missing rank drawn hatched grey: " + pixels(shot, 0x9e9e9e));
    }
}
