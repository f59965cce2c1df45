package dev.ncclguard.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

class CheckCommandTest {
    @TempDir
    Path dir;

    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final ByteArrayOutputStream err = new ByteArrayOutputStream();

    private int check(String... args) {
        out.reset();
        err.reset();
        return Cli.run(prepend("check", args), new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
    }

    static String[] prepend(String first, String[] rest) {
        String[] all = new String[rest.length + 1];
        all[0] = first;
        System.arraycopy(rest, 0, all, 1, rest.length);
        return all;
    }

    private List<String> lines() {
        return out.toString(StandardCharsets.UTF_8).lines().toList();
    }

    private String err() {
        return err.toString(StandardCharsets.UTF_8);
    }

    private Path clean(String name) throws Exception {
        return TestReports.process(1, "a").comm("00000000000000aa", 0, 1, 0x10, 100, 200).write(dir, name);
    }

    private Path leaky(String name) throws Exception {
        return TestReports.process(2, "b").comm("00000000000000bb", 0, 1, 0x20, 100, 0).event(0x30, 150)
                .write(dir, name);
    }

    @Test
    void cleanReportsPassWithOneLineEach() throws Exception {
        clean("r1/a.json");
        clean("r2/a.json");
        assertEquals(0, check(dir.toString()));
        List<String> lines = lines();
        assertEquals(3, lines.size(), lines.toString());
        assertTrue(lines.get(0).startsWith("OK    " + dir.resolve("r1/a.json") + " (pid 1 on a): no leaks"), lines.get(0));
        assertEquals("ncclguard check: OK: 2 reports, no leaks (2 communicators created, 2 released)", lines.get(2));
    }

    @Test
    void leakFailsAndEachLeakIsALine() throws Exception {
        Path clean = clean("clean.json");
        Path leaky = leaky("leaky.json");
        assertEquals(1, check(clean.toString(), leaky.toString()));
        List<String> lines = lines();
        assertTrue(lines.contains("LEAKS " + leaky + " (pid 2 on b): 1 leaked communicator, 1 pending event"),
                lines.toString());
        assertTrue(lines.contains("      leaked communicator 0x20 (rank 0 of 1, device 0, commId 00000000000000bb) by "
                + "ncclCommInitRank at com.example.Trainer.init(Trainer.java:42)"), lines.toString());
        assertTrue(lines.contains("      pending event 0x30 (device 0) by cudaEventCreate at "
                + "com.example.Trainer.step(Trainer.java:42)"), lines.toString());
        assertEquals("ncclguard check: FAILED: 2 reports, 1 with leaks (1 leaked communicator, 1 pending event)",
                lines.get(lines.size() - 1));
    }

    @Test
    void cleanupIsSaidInTheWordsOfTheAgentsTextReport() throws Exception {
        Path leaky = leaky("cleaned.json");
        TestReports.cleanup(leaky, 0x30, "synchronized");
        TestReports.cleanup(leaky, 0x20, "aborted");
        assertEquals(1, check(leaky.toString()));
        String synced = dev.ncclguard.cleanup.Outcome.SYNCHRONIZED.describe(dev.ncclguard.catalog.Kind.EVENT);
        assertEquals("synchronized (its work completed while cleanup waited), then destroyed with cudaEventDestroy", synced);
        assertTrue(lines().contains("      pending event 0x30 (device 0) by cudaEventCreate at "
                + "com.example.Trainer.step(Trainer.java:42), cleanup " + synced), lines().toString());
        assertTrue(lines().stream().anyMatch(l -> l.endsWith(", cleanup aborted with ncclCommAbort")), lines().toString());
    }

    @Test
    void leaksMadeAtOnePlaceAreOneLineWithTheirCountAndNextHandles() throws Exception {
        TestReports r = TestReports.process(3, "c");
        for (int i = 0; i < 1000; i++) {
            r.event(0x1000 + i, 100 + i);
        }
        Path many = r.write(dir, "many.json");
        assertEquals(1, check(many.toString()));
        assertTrue(lines().contains("      pending event 0x1000 (device 0) by cudaEventCreate at "
                + "com.example.Trainer.step(Trainer.java:42), and 999 more alike: 0x1001, 0x1002, 0x1003, 0x1004, "
                + "0x1005, ..."), lines().toString());
        assertEquals(3, lines().size(), lines().toString());
    }

    @Test
    void truncatedAndMissingReportsAreNamedAndFailNeverSkipped() throws Exception {
        Path good = clean("good.json");
        String text = Files.readString(good);
        Path cut = Files.writeString(dir.resolve("cut.json"), text.substring(0, text.length() - 40));
        Path missing = dir.resolve("rank-3.json");
        assertEquals(1, check(good.toString(), cut.toString(), missing.toString()));
        List<String> lines = lines();
        assertTrue(lines.stream().anyMatch(l -> l.startsWith("BAD   " + cut + ": truncated or malformed JSON: "
                + "unexpected end of input")), lines.toString());
        assertTrue(lines.contains("BAD   " + missing + ": cannot read: no such file"), lines.toString());
        assertEquals("ncclguard check: FAILED: 3 reports, 2 unreadable (missing, malformed or truncated)",
                lines.get(lines.size() - 1));
    }

    @Test
    void globsMatchReportsAndAGlobThatMatchesNothingFails() throws Exception {
        clean("job/rank-0.json");
        clean("job/rank-1.json");
        Files.writeString(dir.resolve("job/notes.txt"), "not a report");
        assertEquals(0, check(dir + "/job/rank-*.json"));
        assertTrue(lines().get(lines().size() - 1).startsWith("ncclguard check: OK: 2 reports"), lines().toString());
        assertEquals(1, check(dir + "/job/*.xml"));
        assertTrue(lines().contains("BAD   " + dir + "/job/*.xml: no file matches"), lines().toString());
    }

    @Test
    void emptyDirectoryFails() throws Exception {
        Files.createDirectories(dir.resolve("empty"));
        assertEquals(1, check(dir.resolve("empty").toString()));
        assertTrue(lines().contains("BAD   " + dir.resolve("empty") + ": no .json report in this directory"));
    }

    @Test
    void aReportNamedTwiceCountsOnce() throws Exception {
        Path a = clean("a.json");
        assertEquals(0, check(a.toString(), dir.toString(), dir + "/*.json"));
        assertEquals("ncclguard check: OK: 1 report, no leaks (1 communicator created, 1 released)",
                lines().get(lines().size() - 1));
    }

    @Test
    void aFifoNamedAsAReportIsRefusedInOneLineAndNeverBlocks() throws Exception {
        Path fifo = Fifos.make(dir.resolve("rank-0.json"));
        int status = assertTimeoutPreemptively(Duration.ofSeconds(20), () -> check(fifo.toString()));
        assertEquals(2, status);
        assertEquals("ncclguard check: " + fifo + " is a FIFO, not a regular file: reports are read from regular files\n",
                err());
        assertEquals(List.of(), lines());
    }

    @Test
    void aTerminalNamedAsAReportIsRefusedAsACharacterDevice() throws Exception {
        assumeTrue(Files.isExecutable(Fifos.SCRIPT), "util-linux script makes the pseudo-terminal");
        Fifos.Terminal t = Fifos.cliInTerminal(dir, "check \"$(tty)\"");
        assertEquals(2, t.status(), t.screen());
        assertTrue(t.screen().matches("(?s).*ncclguard check: /dev/pts/\\d+ is a character device, not a regular file:"
                + " reports are read from regular files.*"), t.screen());
    }

    @Test
    void directoriesAndGlobsNeverPickUpAFifo() throws Exception {
        clean("job/rank-0.json");
        Fifos.make(dir.resolve("job/rank-1.json"));
        assertEquals(0, assertTimeoutPreemptively(Duration.ofSeconds(20), () -> check(dir + "/job/*.json")));
        assertEquals("ncclguard check: OK: 1 report, no leaks (1 communicator created, 1 released)",
                lines().get(lines().size() - 1));
        assertEquals(0, assertTimeoutPreemptively(Duration.ofSeconds(20), () -> check(dir.resolve("job").toString())));
    }

    @Test
    void junitXmlHasATestcasePerReportAndAFailurePerLeakWithItsCreatingStack() throws Exception {
        Path clean = clean("clean.json");
        Path leaky = leaky("leaky.json");
        Path missing = dir.resolve("gone.json");
        Path xml = dir.resolve("out/ncclguard.xml");
        assertEquals(1, check(clean.toString(), leaky.toString(), missing.toString(), "--junit-xml", xml.toString()));
        assertTrue(lines().contains("ncclguard check: JUnit XML written to " + xml), lines().toString());
        Document doc = DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(xml.toFile());
        Element suite = (Element) doc.getElementsByTagName("testsuite").item(0);
        assertEquals("3", suite.getAttribute("tests"));
        assertEquals("2", suite.getAttribute("failures"));
        assertEquals("1", suite.getAttribute("errors"));
        NodeList cases = doc.getElementsByTagName("testcase");
        assertEquals(3, cases.getLength());
        Element ok = (Element) cases.item(0);
        assertEquals(clean + " (pid 1 on a)", ok.getAttribute("name"));
        assertEquals(0, ok.getElementsByTagName("failure").getLength());
        Element bad = (Element) cases.item(1);
        NodeList failures = bad.getElementsByTagName("failure");
        assertEquals(2, failures.getLength());
        Element comm = (Element) failures.item(0);
        assertEquals("leaked communicator", comm.getAttribute("type"));
        assertTrue(comm.getAttribute("message").startsWith("leaked communicator 0x20 (rank 0 of 1"), comm.getAttribute("message"));
        assertTrue(comm.getTextContent().contains("created by ncclCommInitRank on thread \"rank-0\" at ")
                && comm.getTextContent().contains("\n  at com.example.Trainer.init(Trainer.java:42)\n"), comm.getTextContent());
        Element gone = (Element) cases.item(2);
        assertEquals(missing.toString(), gone.getAttribute("name"));
        assertEquals("cannot read: no such file",
                ((Element) gone.getElementsByTagName("error").item(0)).getAttribute("message"));
    }

    @Test
    void junitXmlOfACleanRunHasNoFailures() throws Exception {
        Path xml = dir.resolve("clean.xml");
        assertEquals(0, check(clean("a.json").toString(), "--junit-xml=" + xml));
        Document doc = DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(xml.toFile());
        assertEquals("0", ((Element) doc.getElementsByTagName("testsuites").item(0)).getAttribute("failures"));
        assertEquals(1, doc.getElementsByTagName("testcase").getLength());
    }

    @Test
    void junitXmlEscapesWhatTheReportsHold() throws Exception {
        Path odd = TestReports.process(5, "<b>&\"x\"\u0001</b>").comm("00000000000000cc", 0, 1, 0x40, 100, 0)
                .write(dir, "odd.json");
        Path xml = dir.resolve("odd.xml");
        assertEquals(1, check(odd.toString(), "--junit-xml", xml.toString()));
        Document doc = DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(xml.toFile());
        assertTrue(((Element) doc.getElementsByTagName("testcase").item(0)).getAttribute("name")
                .endsWith("(pid 5 on <b>&\"x\"\ufffd</b>)"));
    }

    @Test
    void anUnwritableJunitTargetIsAnOutputError() throws Exception {
        Files.createDirectories(dir.resolve("a-dir"));
        assertEquals(2, check(clean("a.json").toString(), "--junit-xml", dir.resolve("a-dir").toString()));
        assertEquals("ncclguard check: cannot write --junit-xml " + dir.resolve("a-dir") + ": it is a directory\n", err());
    }

    // --- issue 30: reports of an attach, and tests that ran without the agent ---

    @Test
    void aCleanReportOfAnAttachIsAPartialOk() throws Exception {
        Path r = TestReports.process(7, "a").attached(5_000, 2, 1).comm("00000000000000aa", 0, 1, 0x10, 6_000, 7_000)
                .write(dir, "attached.json");
        assertEquals(0, check(r.toString()));
        String partial = "partial: tracked since 2026-05-28T20:26:45Z, attached; 2 communicators existed before"
                + " (NCCL RAS)";
        assertTrue(lines().get(0).endsWith("no leaks (1 communicator created, 1 released) (" + partial + ")"), lines().toString());
        assertEquals("ncclguard check: OK (" + partial + "): 1 report, no leaks (1 communicator created, 1 released)",
                lines().get(lines().size() - 1));
    }

    @Test
    void withoutRasTheVerdictSaysWhatExistedBeforeIsNotKnown() throws Exception {
        Path r = TestReports.process(7, "a").attached(5_000, null, null).write(dir, "attached.json");
        assertEquals(0, check(r.toString()));
        assertTrue(lines().get(lines().size() - 1).startsWith("ncclguard check: OK (partial: tracked since"
                + " 2026-05-28T20:26:45Z, attached; communicators made before are not known): 1 report"), lines().toString());
    }

    @Test
    void requireFullFailsAReportOfAnAttach() throws Exception {
        Path r = TestReports.process(7, "a").attached(5_000, null, null).write(dir, "attached.json");
        Path full = clean("full.json");
        Path xml = dir.resolve("check.xml");
        assertEquals(1, check(r.toString(), full.toString(), "--require-full", "--junit-xml", xml.toString()));
        assertTrue(lines().get(0).startsWith("PARTIAL " + r + " (pid 7 on a): partial: tracked since"), lines().toString());
        assertEquals("ncclguard check: FAILED: 2 reports, 1 partial (attached to a running JVM; --require-full)",
                lines().get(lines().size() - 1));
        assertTrue(Files.readString(xml).contains("type=\"partial report\""));
        assertEquals(0, check(full.toString(), "--require-full"), "a report of a whole run passes");
    }

    @Test
    void testsThatRanWithoutTheAgentFailWithTheFix() throws Exception {
        Path reports = Files.createDirectories(dir.resolve("ncclguard"));
        Path surefire = Files.createDirectories(dir.resolve("surefire-reports"));
        Files.writeString(surefire.resolve("TEST-sample.AllReduceTest.xml"), "<testsuite/>");
        assertEquals(1, check(reports.toString(), "--test-results", surefire.toString(),
                "--test-results", dir.resolve("failsafe-reports").toString()));
        assertEquals(1, lines().size(), lines().toString());
        assertTrue(lines().get(0).startsWith("ncclguard check: FAILED: 1 test class ran (" + surefire
                + ") but no test JVM wrote a report in " + reports + ": the agent was not in their command line."), lines().get(0));
        assertTrue(lines().get(0).contains("<argLine>@{argLine} ...</argLine>"), lines().get(0));

        assertEquals(0, check(reports.toString(), "--test-results", surefire.toString(), "--allow-no-reports"));
        assertTrue(lines().get(0).startsWith("ncclguard check: OK: no reports in " + reports
                + " (allowed by --allow-no-reports); 1 test class ran"), lines().toString());
    }

    @Test
    void noTestRanAndNoReportIsNothingToCheck() throws Exception {
        Path reports = dir.resolve("ncclguard"); // not even made: prepare-agent did not run either
        assertEquals(0, check(reports.toString(), "--test-results", dir.resolve("surefire-reports").toString()));
        assertTrue(lines().get(0).endsWith(": nothing to check"), lines().toString());
        assertEquals(1, check(reports.toString()), "without --test-results a missing report still fails");
    }

    @Test
    void testResultsDoNotExcuseAReportThatIsThere() throws Exception {
        Path surefire = Files.createDirectories(dir.resolve("surefire-reports"));
        Files.writeString(surefire.resolve("TEST-x.xml"), "<testsuite/>");
        leaky("ncclguard/leaky.json");
        assertEquals(1, check(dir.resolve("ncclguard").toString(), "--test-results", surefire.toString(),
                "--allow-no-reports"));
    }
}
