package dev.ncclguard.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ncclguard.testkit.ChildJvm;
import dev.ncclguard.testkit.Output;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * merge and check of reports far past any job's size, in a 256 MB heap (issue 34, item 4): a
 * million leaked communicators (607 MB), and a report with one string of 50 MB.
 */
class MergeScaleIT {
    @TempDir
    Path dir;

    @Test
    void mergeOfAMillionCommunicatorsRunsInA256MegabyteHeapAndWritesABoundedPage() throws Exception {
        Path report = dir.resolve("million.json");
        BenchInputs.comms(report, 1_000_000, null);
        Path html = dir.resolve("million.html");
        long start = System.nanoTime();
        Output r = ChildJvm.agentCli().jvmArg("-Xmx256m").jvmArg("-XX:+ExitOnOutOfMemoryError").timeout(240)
                .run("merge", report.toString(), "--html", html.toString());
        long ms = (System.nanoTime() - start) / 1_000_000;
        Files.delete(report);
        assertEquals(1, r.exitCode(), r.describe());
        assertEquals("", r.stderr());
        assertTrue(r.stdout().contains("ncclguard merge: 1,000,000 of 1,000,000 communicators not released by every"
                + " rank: "), r.stdout().lines().reduce((a, b) -> b).orElse(""));
        assertTrue(r.stdout().contains("and 999,980 more"), "the verdict names 20 and counts the rest");
        assertTrue(r.stdout().length() < 200_000, "the text shows 200 and groups the rest: " + r.stdout().length());
        assertTrue(r.stdout().contains("999,800 more communicators, alike ones a line"), r.stdout());
        assertTrue(Files.size(html) < 4_000_000, "the page: " + Files.size(html));
        String page = Files.readString(html);
        assertTrue(page.contains("id=\"groups\""), "the rest in groups");
        assertTrue(page.contains("data-state=\"leaked\" data-count=\"249950\""), "4 places, alike in each");
        assertTrue(ms < 180_000, ms + " ms");
    }

    @Test
    void aFiftyMegabyteStringIsOneLineForCheckAndMerge() throws Exception {
        Path report = dir.resolve("long-string.json");
        BenchInputs.comms(report, 1, "x".repeat(50 << 20));
        for (String command : new String[] {"check", "merge"}) {
            Output r = ChildJvm.agentCli().jvmArg("-Xmx256m").jvmArg("-XX:+ExitOnOutOfMemoryError")
                    .run(command, report.toString());
            assertEquals(1, r.exitCode(), command + ": " + r.describe());
            assertEquals("", r.stderr(), command);
            String bad = r.stdout().lines().filter(l -> l.startsWith("BAD ")).findFirst().orElse("");
            assertTrue(bad.endsWith(report + ": malformed JSON: a string longer than 1,048,576 characters (1 MiB),"
                    + " longer than any the agent writes at line 11, column 114"), command + ": " + r.stdout());
            assertFalse(r.stdout().contains("Exception"), r.stdout());
        }
    }
}
