package dev.ncclguard.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class CheckCommandTest {
    @TempDir
    Path dir;

    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final ByteArrayOutputStream err = new ByteArrayOutputStream();

    private int check(String... args) {
        return Cli.run(prepend("check", args), new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
    }

    private static String[] prepend(String first, String[] rest) {
        String[] all = new String[rest.length + 1];
        all[0] = first;
        System.arraycopy(rest, 0, all, 1, rest.length);
        return all;
    }

    private List<String> lines() {
        return out.toString(StandardCharsets.UTF_8).lines().toList();
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
        out.reset();
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
    void noArgumentsIsAUsageError() {
        assertEquals(2, check());
        assertTrue(err.toString(StandardCharsets.UTF_8).startsWith("ncclguard check: no reports given"));
    }
}
