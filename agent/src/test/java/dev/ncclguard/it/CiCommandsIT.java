package dev.ncclguard.it;

import static dev.ncclguard.testkit.Texts.count;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ncclguard.cli.Cli;
import dev.ncclguard.it.apps.OneRankLeaksApp;
import dev.ncclguard.testkit.ChildJvm;
import dev.ncclguard.testkit.Chromium;
import dev.ncclguard.testkit.Images;
import dev.ncclguard.testkit.Output;
import dev.ncclguard.testkit.ReportJson;
import java.awt.image.BufferedImage;
import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * check, merge and explain on reports of real runs under the agent against the emulator: the
 * samples' clean and leaky scenarios, and a two-rank job in which rank 1 leaks (ranks as threads
 * of one JVM until ranks in separate processes exist; {@link #perRankFiles} splits its report per
 * rank the way separate processes will write it). The HTML page is rendered in headless Chromium.
 */
class CiCommandsIT {
    /** HtmlTimeline's colors: leaked, and released. */
    private static final int LEAKED_RGB = 0xd32f2f;
    private static final int RELEASED_RGB = 0x2e7d32;
    /** HtmlTimeline's color of a destroy that waited. */
    private static final int WAIT_RGB = 0xf9a825;
    /** Where the rendered pages stay after the build, for a person to look at. */
    private static final Path KEPT = Path.of("target", "ci-html");

    @TempDir
    static Path runs;
    static Path clean;
    static Path leaky;
    static Path oneRank;
    static Path suppressed;
    static Output suppressedRun;

    @TempDir
    Path dir;

    @BeforeAll
    static void runTheSamplesUnderTheAgent() throws Exception {
        clean = runs.resolve("clean.json");
        leaky = runs.resolve("leaky.json");
        oneRank = runs.resolve("one-rank.json");
        suppressed = runs.resolve("suppressed.json");
        assertEquals(0, ChildJvm.sample().agent("report=" + clean + ",text=none").run("clean").exitCode());
        assertEquals(0, ChildJvm.sample().agent("report=" + leaky + ",text=none").run("leaky").exitCode());
        Output r = ChildJvm.sample().agent("report=" + oneRank + ",text=none")
                .mainClass(AgentSafetyIT.testClasspath() + File.pathSeparator + samplesClasses(),
                        OneRankLeaksApp.class.getName()).run();
        assertEquals(0, r.exitCode(), r.describe());
        Path rules = Files.writeString(runs.resolve("known.supp"), "# the leaky sample's accepted leaks\n"
                + "comm:dev.ncclguard.samples.Rank.initCommunicator\nevent:Rank.createEvent\nstream:^dev.ncclguard.samples.Rank.allocate(\n");
        suppressedRun = ChildJvm.sample().agent("report=" + suppressed + ",suppress=" + rules + ",exit-code=3").run("leaky");
    }

    private static String samplesClasses() {
        return System.getProperty("ncclguard.test.samplesClasses");
    }

    /** Runs a command of the agent jar's CLI in this JVM: exit status and output. */
    private record Run(int status, String out, String err) {
    }

    private static Run cli(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int status = Cli.run(args, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Run(status, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    // --- check ---

    @Test
    void checkOfTheAgentJarFailsTheBuildOnALeakyRunAndPassesACleanOne() throws Exception {
        Output ok = ChildJvm.agentCli().timeout(60).run("check", clean.toString());
        assertEquals(0, ok.exitCode(), ok.describe());
        assertTrue(ok.stdout().contains("ncclguard check: OK: 1 report, no leaks (2 communicators created, 2 released)"),
                ok.describe());
        Output bad = ChildJvm.agentCli().timeout(60).run("check", clean.toString(), leaky.toString());
        assertEquals(1, bad.exitCode(), bad.describe());
        assertTrue(bad.stdout().contains("ncclguard check: FAILED: 2 reports, 1 with leaks (2 leaked communicators, "
                + "2 pending events, 2 unsynchronized streams)"), bad.describe());
        assertTrue(bad.stdout().contains(" by ncclCommInitRank at dev.ncclguard.samples."), "creating frame: " + bad.describe());
    }

    @Test
    void checkNamesATruncatedCopyOfARealReportAndFails() throws Exception {
        byte[] whole = Files.readAllBytes(leaky);
        Path cut = Files.write(dir.resolve("cut.json"), java.util.Arrays.copyOf(whole, whole.length * 2 / 3));
        Run r = cli("check", clean.toString(), cut.toString());
        assertEquals(1, r.status(), r.out());
        assertTrue(r.out().contains("BAD   " + cut + ": truncated or malformed JSON: unexpected end of input"), r.out());
        assertTrue(r.out().contains("1 unreadable (missing, malformed or truncated)"), r.out());
    }

    @Test
    void suppressedLeaksAreListedNotCountedAndNeitherFailTheJvmNorTheCheck() throws Exception {
        assertEquals(0, suppressedRun.exitCode(), "exit-code=3 ignores suppressed leaks: " + suppressedRun.describe());
        assertTrue(suppressedRun.stderr().contains("Suppressed (listed, not counted):"), suppressedRun.describe());
        assertTrue(suppressedRun.stderr().lines().anyMatch(l -> l.startsWith("SUMMARY: ncclguard: no leaks (2 communicators "
                + "created, 0 released; ") && l.endsWith(" suppressed)")), suppressedRun.describe());
        JsonNode json = ReportJson.read(suppressed);
        assertEquals(0, json.path("leaks").size(), json.toString());
        int n = json.path("suppressed").size();
        assertTrue(n >= 6, json.toString());
        assertEquals(n, ReportJson.summary(json, "suppressed"));
        assertEquals(0, ReportJson.summary(json, "leakedComms"));
        assertEquals("comm:dev.ncclguard.samples.Rank.initCommunicator",
                json.path("suppressed").get(0).path("suppression").asText());
        assertTrue(json.path("communicators").get(0).path("suppressed").asBoolean(), json.toString());

        Run r = cli("check", suppressed.toString());
        assertEquals(0, r.status(), r.out());
        assertTrue(r.out().contains("no leaks (2 communicators created, 0 released) (" + n + " suppressed)"), r.out());
    }

    // --- the communicators list the merge relies on ---

    @Test
    void reportOfTheTwoRankJobListsBothRanksCommunicatorWithHowEachEnded() throws Exception {
        JsonNode json = ReportJson.read(oneRank);
        JsonNode comms = json.path("communicators");
        assertEquals(2, comms.size(), json.toString());
        JsonNode rank0 = byRank(comms, 0);
        JsonNode rank1 = byRank(comms, 1);
        assertEquals(rank0.path("commId").asText(), rank1.path("commId").asText());
        assertFalse(rank0.path("leaked").asBoolean());
        assertEquals("ncclCommDestroy", rank0.path("releasedBy").asText());
        assertTrue(rank0.path("releasedAt").asText().compareTo(rank0.path("createdAt").asText()) >= 0, rank0.toString());
        assertTrue(rank1.path("leaked").asBoolean());
        assertTrue(rank1.path("releasedBy").isNull());
        assertEquals(1, ReportJson.leaks(json, "comm").size());
    }

    private static JsonNode byRank(JsonNode comms, int rank) {
        for (JsonNode c : comms) {
            if (c.path("rank").asInt(-1) == rank) {
                return c;
            }
        }
        throw new AssertionError("no rank " + rank + " in " + comms);
    }

    // --- merge ---

    @Test
    void mergeNamesTheRankThatDidNotReleaseFromOneReport() {
        Run r = cli("merge", oneRank.toString());
        assertEquals(1, r.status(), r.out());
        assertTrue(r.out().contains("rank 1 did not release it, rank 0 did"), r.out());
        assertTrue(r.out().contains("=> rank 1 (pid "), r.out());
        assertTrue(r.out().contains("created at dev.ncclguard.it.apps.OneRankLeaksApp.rank(OneRankLeaksApp.java:"), r.out());
    }

    @Test
    void mergeJoinsPerRankReportsByCommId() throws Exception {
        List<Path> files = perRankFiles(oneRank, dir);
        Run r = cli("merge", files.get(0).toString(), files.get(1).toString(), clean.toString());
        assertEquals(1, r.status(), r.out());
        String[] blocks = r.out().split("\n\n");
        long joined = java.util.Arrays.stream(blocks)
                .filter(b -> b.contains("rank 1 did not release it, rank 0 did")).count();
        assertEquals(1, joined, r.out());
        assertTrue(r.out().contains("2 ranks; released by every rank"), "the clean run's communicator: " + r.out());
        assertTrue(r.out().contains("ncclguard merge: 1 of 2 communicators not released by every rank: rank 1 (pid "), r.out());
    }

    /**
     * Splits a report of ranks-as-threads into one report per rank, each with only its rank's
     * communicators and leaks: the shape reports of one process per rank will have.
     */
    static List<Path> perRankFiles(Path report, Path dir) throws IOException {
        JsonNode whole = ReportJson.tree(report);
        List<Path> out = new ArrayList<>();
        for (int rank = 0; rank < 2; rank++) {
            ObjectNode part = whole.deepCopy();
            ArrayNode comms = part.putArray("communicators");
            int created = 0;
            int released = 0;
            for (JsonNode c : whole.path("communicators")) {
                if (c.path("rank").asInt(-1) == rank) {
                    comms.add(c);
                    created++;
                    released += c.path("leaked").asBoolean() ? 0 : 1;
                }
            }
            ArrayNode leaks = part.putArray("leaks");
            for (JsonNode l : whole.path("leaks")) {
                if (l.path("details").path("rank").asInt(-1) == rank) {
                    leaks.add(l);
                }
            }
            ObjectNode summary = (ObjectNode) part.path("summary");
            summary.put("commsCreated", created).put("commsReleased", released).put("leakedComms", leaks.size());
            Path file = dir.resolve("rank-" + rank + ".json");
            ReportJson.write(file, part);
            out.add(file);
        }
        return out;
    }

    @Test
    void mergeHtmlRendersInHeadlessChromiumWithTheLeakHighlighted() throws Exception {
        Path html = KEPT.resolve("merge.html");
        Run r = cli("merge", oneRank.toString(), leaky.toString(), clean.toString(), "--html", html.toString());
        assertEquals(1, r.status(), r.out());
        String source = Files.readString(html);
        assertFalse(source.contains("<script") || source.contains("src=") || source.matches("(?s).*href=\"[^#].*"),
                "self-contained: links only within the page");

        Path png = KEPT.resolve("merge.png");
        Chromium.Result rendered = Chromium.render(html, 1100, 1400, png);
        String dom = rendered.dom();
        assertTrue(dom.contains("2 of 3 communicators not released by every rank."), dom + rendered.err());
        assertEquals(2, count(dom, "<section class=\"comm leaked\""), dom);
        assertEquals(1, count(dom, "<details class=\"comm\" "), "the clean run's, collapsed: " + dom);
        assertTrue(dom.contains("data-rank=\"1\" data-pid=\"" + pid(oneRank) + "\" data-state=\"leaked\""), dom);
        assertTrue(dom.contains("data-rank=\"0\" data-pid=\"" + pid(oneRank) + "\" data-state=\"released\""), dom);
        assertEquals(3, count(dom, "<i class=\"bar leaked\""), "2 ranks of the leaky run, rank 1 of the job: " + dom);
        assertEquals(3, count(dom, "class=\"leak-label\""), dom);
        assertTrue(dom.indexOf("<nav id=\"index\">") < dom.indexOf("<section class=\"comm leaked\""), "index first");

        assertTrue(Files.isRegularFile(png), "no screenshot: " + rendered.err());
        BufferedImage shot = Images.read(png);
        // the legend's swatches are 140 pixels each: thousands come only from the timeline bars
        assertTrue(Images.pixels(shot, LEAKED_RGB) > 10_000, "leaked bars drawn red in " + png + ": " + Images.pixels(shot, LEAKED_RGB));
        // green beyond the legend's swatch: rank 0's bar, on an axis that runs to rank 1's exit (its width
        // is the share of that span rank 0 lived, at least 2 px); the clean run's communicator is collapsed
        assertTrue(Images.pixels(shot, RELEASED_RGB) > 140 + 2 * 14, "released bars drawn green in " + png + ": "
                + Images.pixels(shot, RELEASED_RGB));
    }

    /**
     * A job as launchers run it, one JVM per rank, with rank 1 killed by SIGKILL: it writes no
     * report, and merge says so instead of passing the job.
     */
    @Test
    void mergeOfAJobWhoseRankWasKilledFailsAndNamesTheRankWithoutAReport() throws Exception {
        Path reports = Files.createDirectories(dir.resolve("killed"));
        Output r = ChildJvm.sample()
                .agent("action=cleanup,timeout=2s,text=none,report=" + reports.resolve("report-%p.json"))
                .run("multi-rank", "--ranks", "2", "--kill", "1");
        assertEquals(0, r.exitCode(), r.describe());
        Run merged = cli("merge", reports.toString());
        assertEquals(1, merged.status(), merged.out());
        assertTrue(merged.out().contains("  rank 1  no report\n"), merged.out());
        assertTrue(merged.out().matches("(?s).*=> rank 1 wrote no report: rank 0 \\(pid \\d+ on [^)]+\\) lists the"
                + " communicator with 2 ranks; rank 0 was aborted by cleanup at exit: a process killed.*"), merged.out());
        assertTrue(merged.out().contains("names ranks without a report: "), merged.out());
        Run allowed = cli("merge", reports.toString(), "--allow-missing-ranks");
        assertTrue(allowed.out().contains("(allowed by --allow-missing-ranks)"), allowed.out());
        assertEquals(1, allowed.status(), "rank 0 left its communicator to cleanup: still a leak\n" + allowed.out());
    }

    /**
     * The wait a destroy spends on a rank that is gone, end to end: rank 1 killed, rank 0's
     * ncclCommDestroy waits for its goodbye until the emulator's bound (as NCCL's would, for ever),
     * the agent records when the destroy was called, and the merge page draws the wait.
     */
    @Test
    void mergePageShowsTheWaitOfADestroyWhosePeerWasKilled() throws Exception {
        Path reports = Files.createDirectories(dir.resolve("waited"));
        Output r = ChildJvm.sample().env("NCCLEMU_DESTROY_TIMEOUT_MS", "1500")
                .agent("text=none,report=" + reports.resolve("report-%p.json"))
                .run("multi-rank", "--ranks", "2", "--then", "clean", "--kill", "1");
        assertEquals(0, r.exitCode(), r.describe());
        List<JsonNode> withComms = new ArrayList<>();
        try (var files = Files.list(reports)) {
            for (Path p : files.toList()) {
                JsonNode report = ReportJson.read(p);
                if (report.path("communicators").size() > 0) {
                    withComms.add(report);
                }
            }
        }
        // the launcher's JVM, under the agent too, made none; rank 1 was killed before it wrote one
        assertEquals(1, withComms.size(), "rank 0's report alone: " + withComms);
        JsonNode comm = withComms.get(0).path("communicators").get(0);
        assertEquals("ncclCommDestroy", comm.path("releasedBy").asText(), comm.toString());
        long waited = java.time.Duration.between(java.time.Instant.parse(comm.path("releaseStartedAt").asText()),
                java.time.Instant.parse(comm.path("releasedAt").asText())).toMillis();
        assertTrue(waited >= 1_400 && waited < 10_000, "the destroy waited the emulator's 1.5 s: " + waited + " ms");

        Path html = KEPT.resolve("merge-waited.html");
        Run merged = cli("merge", reports.toString(), "--html", html.toString());
        assertEquals(1, merged.status(), "rank 1 has no report: " + merged.out());
        assertTrue(merged.out().matches("(?s).*released \\+[0-9.]+s by ncclCommDestroy \\(it waited 1\\.[45]\\d s\\).*"),
                merged.out());
        Path png = KEPT.resolve("merge-waited.png");
        Chromium.Result rendered = Chromium.render(html, 1100, 900, png);
        String dom = rendered.dom();
        assertTrue(dom.matches("(?s).*<i class=\"wait\" [^>]*title=\"ncclCommDestroy waited 1\\.[45]\\d s\">.*"),
                dom + rendered.err());
        assertTrue(dom.matches("(?s).*<span class=\"wait-label\">waited 1\\.[45]\\d s</span>.*"), dom);
        assertTrue(Files.isRegularFile(png), "no screenshot: " + rendered.err());
        // the wait's amber is drawn over most of rank 0's bar, which spans the communicator's axis
        assertTrue(Images.pixels(Images.read(png), WAIT_RGB) > 5_000, "the wait drawn amber in " + png);
    }

    private static long pid(Path report) throws IOException {
        return ReportJson.tree(report).path("pid").asLong();
    }

    // --- explain ---

    @Test
    void explainNamesTheLeakedCommunicatorOfTheRankTheWarningsBlame() throws Exception {
        Path log = dir.resolve("job.log");
        try (InputStream in = CiCommandsIT.class.getResourceAsStream("/logs/two-process-exit.txt")) {
            Files.copy(in, log);
        }
        Run r = cli("explain", log.toString(), oneRank.toString(), clean.toString());
        assertEquals(0, r.status(), r.out());
        assertTrue(r.out().contains("== resource not released at exit: 4 warnings"), r.out());
        assertTrue(r.out().contains("  In the reports (2 reports):\n    pid " + pid(oneRank) + " on "), r.out());
        assertTrue(r.out().contains(": leaked communicator "), r.out());
        assertTrue(r.out().contains("(rank 1 of 2, device 1, commId "), r.out());
        assertTrue(r.out().contains("      => explains the lines that name rank 1\n"), r.out());
    }
}
