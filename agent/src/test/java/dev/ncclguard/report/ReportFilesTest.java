package dev.ncclguard.report;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ncclguard.log.Log;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ReportFilesTest {
    @TempDir
    Path dir;

    private static byte[] utf8(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    private List<Path> entries(Path in) throws IOException {
        try (Stream<Path> files = Files.list(in)) {
            return files.toList();
        }
    }

    @Test
    void writesTheWholeContent() throws IOException {
        Path target = dir.resolve("report.json");
        byte[] content = utf8("{\"schema\": \"ncclguard-report/1\"}\n");

        ReportFiles.writeAtomically(target, content);

        assertArrayEquals(content, Files.readAllBytes(target));
        assertEquals(List.of(target), entries(dir));
    }

    @Test
    void replacesAnExistingReport() throws IOException {
        Path target = dir.resolve("report.json");
        Files.writeString(target, "a much longer report from an earlier run that must not survive in part");

        ReportFiles.writeAtomically(target, utf8("{}"));

        assertEquals("{}", Files.readString(target));
        assertEquals(List.of(target), entries(dir));
    }

    @Test
    void aReportWrittenAsItIsMadeIsWholeOrNotThere() throws IOException {
        Path target = dir.resolve("report.json");
        Files.writeString(target, "{\"earlier\": true}");
        byte[] chunk = new byte[1 << 16];

        assertThrows(ReportFiles.ReportWriteException.class, () -> ReportFiles.writeAtomically(target, out -> {
            for (int i = 0; i < 100; i++) {
                out.write(chunk); // 6.5 MB in the temporary file, then the writer fails
            }
            throw new IOException("disk full");
        }, "report"));

        assertEquals("{\"earlier\": true}", Files.readString(target));
        assertEquals(List.of(target), entries(dir), "no temporary file left");
    }

    @Test
    void aJsonReportStreamedToAFileIsTheOneMadeInMemory() throws IOException {
        Path target = dir.resolve("report.json");
        Report report = ReportGoldenTest.small();

        ReportFiles.writeAtomically(target, JsonReportWriter.content(report), "report");

        assertArrayEquals(JsonReportWriter.toBytes(report), Files.readAllBytes(target));
    }

    @Test
    void createsMissingParentDirectories() throws IOException {
        Path target = dir.resolve("build/ncclguard/4242.json");

        ReportFiles.writeAtomically(target, utf8("{}"));

        assertEquals("{}", Files.readString(target));
    }

    @Test
    void parentThatIsAFileFailsWithOneLineNamingPathCauseAndFix() throws IOException {
        Path file = Files.writeString(dir.resolve("notadir"), "x");
        Path target = file.resolve("r.json");

        IOException e = assertThrows(ReportFiles.ReportWriteException.class,
                () -> ReportFiles.writeAtomically(target, utf8("{}")));

        assertEquals("cannot write report to " + target + ": " + file + " is not a directory;"
                + " set report= to a writable path", e.getMessage());
        assertEquals(List.of(file), entries(dir));
    }

    @Test
    void targetThatIsADirectoryFailsAndLeavesNoTemporaryFile() throws IOException {
        Path target = Files.createDirectories(dir.resolve("report.json"));
        Files.writeString(target.resolve("keep"), "x");

        IOException e = assertThrows(ReportFiles.ReportWriteException.class,
                () -> ReportFiles.writeAtomically(target, utf8("{}"), "text"));

        assertEquals("cannot write text report to " + target + ": it is a directory; set text= to a writable path",
                e.getMessage());
        assertEquals(List.of(target), entries(dir));
        assertEquals(List.of(target.resolve("keep")), entries(target));
    }

    @Test
    void writeLogsTheFailureAsOneLineInsteadOfThrowing() throws IOException {
        Path file = Files.writeString(dir.resolve("notadir"), "x");
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        PrintStream stderr = System.err;
        System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
        try {
            Log.configure(false);
            assertFalse(ReportFiles.write(file.resolve("r.json"), utf8("{}"), "report"));
        } finally {
            System.setErr(stderr);
        }
        assertEquals(List.of("ncclguard: cannot write report to " + file.resolve("r.json") + ": " + file
                + " is not a directory; set report= to a writable path"), captured.toString(StandardCharsets.UTF_8)
                .lines().toList());
    }

    @Test
    void writeAnswersTrueWhenWritten() throws IOException {
        assertTrue(ReportFiles.write(dir.resolve("r.txt"), utf8("SUMMARY: ncclguard: no leaks"), "text"));
        assertEquals("SUMMARY: ncclguard: no leaks", Files.readString(dir.resolve("r.txt")));
    }

    private static Path mkfifo(Path path) throws Exception {
        Process p = new ProcessBuilder("mkfifo", path.toString()).inheritIO().start();
        assertTrue(p.waitFor(10, java.util.concurrent.TimeUnit.SECONDS));
        assertEquals(0, p.exitValue(), "mkfifo " + path);
        return path;
    }

    @Test
    void aFifoIsWrittenThroughAndStaysAFifo() throws Exception {
        Path fifo = mkfifo(dir.resolve("pipe"));
        java.util.concurrent.CompletableFuture<String> reader = java.util.concurrent.CompletableFuture.supplyAsync(() -> {
            try {
                return Files.readString(fifo);
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        });

        ReportFiles.writeAtomically(fifo, utf8("{\"via\": \"fifo\"}"), "report");

        assertEquals("{\"via\": \"fifo\"}", reader.get(30, java.util.concurrent.TimeUnit.SECONDS));
        assertTrue(Files.isRegularFile(fifo, java.nio.file.LinkOption.NOFOLLOW_LINKS) == false
                && Files.exists(fifo), "still a FIFO");
        assertEquals(List.of(fifo), entries(dir), "no temporary file beside it");
    }

    @Test
    void aSymbolicLinkIsReplacedNotWrittenThrough() throws IOException {
        Path elsewhere = Files.writeString(dir.resolve("elsewhere.txt"), "not the agent's to overwrite");
        Path link = Files.createSymbolicLink(dir.resolve("report.json"), elsewhere);

        ReportFiles.writeAtomically(link, utf8("{}"));

        assertEquals("not the agent's to overwrite", Files.readString(elsewhere));
        assertFalse(Files.isSymbolicLink(link));
        assertEquals("{}", Files.readString(link));
    }

    @Test
    void aLeftoverOfADeadWriterIsRemovedAtTheNextWrite() throws Exception {
        Process dead = new ProcessBuilder("true").start();
        dead.waitFor();
        Path leftover = Files.writeString(dir.resolve(".report.json." + dead.pid() + ".1a2b3c.tmp"), "half a report");
        Path live = Files.writeString(dir.resolve(".report.json." + ProcessHandle.current().parent().orElseThrow().pid()
                + ".1a2b3c.tmp"), "a writer that still runs");
        Path other = Files.writeString(dir.resolve(".other.json." + dead.pid() + ".1a2b3c.tmp"), "another file's");

        ReportFiles.writeAtomically(dir.resolve("report.json"), utf8("{}"));

        assertFalse(Files.exists(leftover), "the dead writer's temporary file is gone");
        assertTrue(Files.exists(live), "a live writer's temporary file stays");
        assertTrue(Files.exists(other), "another target's temporary file stays");
    }

    @Test
    void aLeftoverIsRemovedWhateverRandomPartTheWriterGaveIt() throws Exception {
        Process dead = new ProcessBuilder("true").start();
        dead.waitFor();
        // every name Long.toHexString can make: one digit to sixteen, the top bit set or not
        List<Path> leftovers = new ArrayList<>();
        for (long random : new long[] {0, 1, 0xf, 0x7fffffffffffffffL, 0x8000000000000000L, 0x9a3e5c7d1b2f4e6aL,
            0xfedcba9876543210L, -1L}) {
            leftovers.add(Files.writeString(dir.resolve(".report.json." + dead.pid() + "." + Long.toHexString(random)
                    + ".tmp"), "half a report"));
        }

        ReportFiles.writeAtomically(dir.resolve("report.json"), utf8("{}"));

        for (Path leftover : leftovers) {
            assertFalse(Files.exists(leftover), leftover + " stays");
        }
    }

    /** Content that writes a first part, then blocks until {@code go} is counted down. */
    private static ReportFiles.Content blockingAfterAPart(java.util.concurrent.CountDownLatch started,
                                                        java.util.concurrent.CountDownLatch go) {
        return out -> {
            out.write(utf8("{\"half\": "));
            out.flush();
            started.countDown();
            try {
                go.await();
            } catch (InterruptedException e) {
                throw new IOException(e);
            }
            out.write(utf8("true}"));
        };
    }

    @Test
    void anAbandonedWriteRemovesItsTemporaryFileAndNeverPutsItInPlace() throws Exception {
        Path target = dir.resolve("report.json");
        java.util.concurrent.CountDownLatch started = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.CountDownLatch go = new java.util.concurrent.CountDownLatch(1);
        WriteGate gate = new WriteGate();
        boolean[] written = {true};
        Thread writer = new Thread(() -> written[0] = ReportFiles.write(target, blockingAfterAPart(started, go), "report", gate));
        writer.start();
        started.await();
        assertEquals(1, entries(dir).size(), "the temporary file is being written");

        assertTrue(gate.abandon());
        assertEquals(List.of(), entries(dir), "the temporary file is removed at once");
        go.countDown();
        writer.join();

        assertFalse(written[0]);
        assertEquals(List.of(), entries(dir), "nothing renamed into place after the abandon");
    }

    @Test
    void anAbandonedNumberedWriteTakesNoNumberAndLogsNothing() throws Exception {
        java.util.concurrent.CountDownLatch started = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.CountDownLatch go = new java.util.concurrent.CountDownLatch(1);
        WriteGate gate = new WriteGate();
        NumberedFiles.Names names = new NumberedFiles.Names(7, "host", "0", java.util.Map.of());
        long[] number = {0};
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        PrintStream saved = System.err;
        System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
        try {
            Log.configure(false);
            Thread writer = new Thread(() -> number[0] = NumberedFiles.write(dir.resolve("r-%n.json").toString(),
                    blockingAfterAPart(started, go), "report", names, -1, gate));
            writer.start();
            started.await();
            assertTrue(gate.abandon());
            go.countDown();
            writer.join();
        } finally {
            System.setErr(saved);
        }
        assertEquals(NumberedFiles.FAILED, number[0]);
        assertEquals(List.of(), entries(dir));
        assertEquals("", err.toString(StandardCharsets.UTF_8), "the exit hook says why, in one line of its own");
    }

    @Test
    void aWriteThatIsNeverAbandonedIsInPlaceWhole() throws Exception {
        Path target = dir.resolve("report.json");
        WriteGate gate = new WriteGate();

        assertTrue(ReportFiles.write(target, out -> out.write(utf8("{}")), "report", gate));

        assertEquals("{}", Files.readString(target));
        assertTrue(gate.abandon(), "an abandon after the write finds nothing to stop");
        assertEquals("{}", Files.readString(target));
    }
}
