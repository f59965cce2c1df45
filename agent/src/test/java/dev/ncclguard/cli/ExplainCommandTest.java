package dev.ncclguard.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.time.Duration;
import java.util.zip.GZIPOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ExplainCommandTest {
    @TempDir
    Path dir;

    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final ByteArrayOutputStream err = new ByteArrayOutputStream();

    private int explain(String... args) {
        return explainWith(InputStream.nullInputStream(), false, args);
    }

    private int explainWith(InputStream stdin, boolean terminal, String... args) {
        out.reset();
        err.reset();
        return Cli.run(CheckCommandTest.prepend("explain", args), new Cli.Io(new PrintStream(out, true,
                StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8), stdin, terminal));
    }

    private String err() {
        return err.toString(StandardCharsets.UTF_8);
    }

    private String text() {
        return out.toString(StandardCharsets.UTF_8);
    }

    /** A log of the test resources, copied out so its path is a plain file. */
    private Path log(String name) throws IOException {
        try (InputStream in = ExplainCommandTest.class.getResourceAsStream("/logs/" + name)) {
            Path file = dir.resolve(name);
            Files.copy(in, file);
            return file;
        }
    }

    @Test
    void exitTimeWarningsAreGroupedWithCauseAndFix() throws Exception {
        Path log = log("two-process-exit.txt");
        assertEquals(0, explain(log.toString()));
        String t = text();
        assertTrue(t.startsWith("ncclguard explain: " + log + ": 4 NCCL warnings in 24 lines: 4 resource not released at exit\n"), t);
        assertTrue(t.contains("NCCL version: 2.28.3+cuda13.0 (pid 4101 on gpu-a, pid 4102 on gpu-a)"), t);
        assertTrue(t.contains("== resource not released at exit: 4 warnings from pid 4101 on gpu-a\n"), t);
        assertTrue(t.contains("  2 x line 16: gpu-a:4101:4121 [0] proxy.cc:1570 NCCL WARN [Service thread] Could not receive "
                + "type from localRank 1, res=3, closed=1\n"), t);
        assertTrue(t.contains("  line 18: gpu-a:4101:4121 [0] proxy.cc:1594 NCCL WARN [Proxy Service 0] Failed to execute "
                + "operation Close from rank 1, retcode 3\n"), t);
        assertTrue(t.contains("  ranks these lines name: 1\n"), t);
        assertTrue(t.contains("  Likely cause: a process of the job exited"), t);
        assertTrue(t.contains("  Fix: destroy every communicator on every rank before exit"), t);
        assertFalse(t.contains("Connection closed by localRank 1\n"), "an INFO line is no warning: " + t);
    }

    @Test
    void reportsNameTheLeakedCommunicatorOfTheRankTheWarningsBlame() throws Exception {
        Path log = log("two-process-exit.txt");
        Path r0 = TestReports.process(4101, "gpu-a").comm("00000000000000aa", 0, 2, 0x10, 100, 900).write(dir, "r0.json");
        Path r1 = TestReports.process(4102, "gpu-a").comm("00000000000000aa", 1, 2, 0x20, 100, 0).write(dir, "r1.json");
        assertEquals(0, explain(log.toString(), r0.toString(), r1.toString()));
        String t = text();
        assertTrue(t.contains("  In the reports (2 reports):\n"
                + "    pid 4102 on gpu-a: leaked communicator 0x20 (rank 1 of 2, device 1, commId 00000000000000aa) by "
                + "ncclCommInitRank at com.example.Trainer.init(Trainer.java:42)\n"
                + "      => explains the lines that name rank 1\n"), t);
    }

    @Test
    void cleanReportsPointAtAProcessWithoutOne() throws Exception {
        Path log = log("two-process-exit.txt");
        Path r0 = TestReports.process(4101, "gpu-a").comm("00000000000000aa", 0, 2, 0x10, 100, 900).write(dir, "r0.json");
        explain(log.toString(), r0.toString());
        assertTrue(text().contains("no report lists a leaked communicator: a process that crashed or was killed"), text());
    }

    @Test
    void eachKindOfWarningGetsItsCategory() throws Exception {
        Path log = log("mixed.txt");
        assertEquals(0, explain(log.toString()));
        String t = text();
        assertTrue(t.contains(": 9 NCCL warnings in 17 lines: 2 dependency or initialization conflict, "
                + "5 network configuration, 1 version mismatch, 1 other NCCL warnings\n"), t);
        assertTrue(t.contains("NCCL versions: 2.28.3+cuda13.0 (pid 27255 on node1); 2.21.5+cuda12.4 (pid 25146 on node2, "
                + "pid 25147 on node2)"), t);
        assertTrue(t.contains("== dependency or initialization conflict: 2 warnings from pid 25147 on node2, pid 27255 on node1\n"
                + "  line 6: node2:25147:25161 [1] init.cc:1102 NCCL WARN Duplicate GPU detected"), t);
        assertTrue(t.contains("  2 x line 10: 2026-02-18 12:54 node1:27255:27934 [0] transport/net_ib.cc:1696 NCCL WARN NET/IB"),
                t);
        assertTrue(t.contains("== version mismatch: 1 warning from an unknown process\n"
                + "  the processes print different NCCL versions: 2.28.3+cuda13.0, 2.21.5+cuda12.4\n"
                + "  line 14: Exception in thread \"main\" java.lang.UnsatisfiedLinkError: Error looking up function "
                + "'ncclCommShrink'"), t);
        assertTrue(t.contains("== other NCCL warnings: 1 warning from pid 25146 on node2\n"), t);
    }

    @Test
    void logWithoutWarningsSaysSo() throws Exception {
        Path log = Files.writeString(dir.resolve("quiet.log"),
                "hello\nNCCL version 2.28.3+cuda13.0\nvm:1:2 [0] NCCL INFO comm 0x1 rank 0 nranks 1 - Init COMPLETE\n");
        assertEquals(0, explain(log.toString()));
        assertTrue(text().contains("0 NCCL warnings in 3 lines\nNCCL version: 2.28.3+cuda13.0 (line 2)\n"), text());
        assertTrue(text().contains("no NCCL warnings (NCCL prints them with NCCL_DEBUG=WARN or INFO)"), text());
    }

    @Test
    void bytesThatAreNotUtf8DoNotStopTheReading() throws Exception {
        byte[] log = ("caf\u00e9 ready\nnode1:7:8 [0] proxy.cc:1570 NCCL WARN [Service thread] Could not receive type "
                + "from localRank 1, res=3, closed=1\n").getBytes(StandardCharsets.ISO_8859_1);
        Path file = Files.write(dir.resolve("latin1.log"), log);
        assertEquals(0, explain(file.toString()));
        assertTrue(text().contains("1 NCCL warning in 2 lines: 1 resource not released at exit"), text());
    }

    @Test
    void unreadableLogOrReportIsAnInputError() throws Exception {
        assertEquals(2, explain(dir.resolve("none.log").toString()));
        assertTrue(err.toString(StandardCharsets.UTF_8).startsWith("ncclguard explain: cannot read "), err.toString());
        Path log = log("two-process-exit.txt");
        Path bad = Files.writeString(dir.resolve("bad.json"), "{");
        assertEquals(2, explain(log.toString(), bad.toString()));
        assertTrue(text().contains("BAD   " + bad + ": truncated or malformed JSON"), text());
    }

    private static final String WARN = "node1:7:8 [0] proxy.cc:1570 NCCL WARN [Service thread] Could not receive type"
            + " from localRank 1, res=3, closed=1\n";

    @Test
    void standardInputIsReadForADash() throws Exception {
        assertEquals(0, explainWith(new ByteArrayInputStream(("hello\n" + WARN).getBytes(StandardCharsets.UTF_8)),
                false, "-"));
        assertTrue(text().startsWith("ncclguard explain: standard input: 1 NCCL warning in 2 lines: 1 resource not"
                + " released at exit\n"), text());
    }

    @Test
    void aGzipLogIsReadAsText() throws Exception {
        Path gz = dir.resolve("job.log.1");
        try (OutputStream o = new GZIPOutputStream(Files.newOutputStream(gz))) {
            o.write(("hello\n" + WARN + WARN).getBytes(StandardCharsets.UTF_8));
        }
        assertEquals(0, explain(gz.toString()));
        assertTrue(text().contains("2 NCCL warnings in 3 lines: 2 resource not released at exit"), text());
        assertTrue(text().contains("  2 x line 2: node1:7:8 [0] proxy.cc:1570 NCCL WARN"), text());
    }

    @Test
    void alikeLinesFromDifferentProcessesAreNeverFoldedTogether() throws Exception {
        Path log = Files.writeString(dir.resolve("two.log"), WARN + WARN + WARN.replace("node1:7:8", "node2:9:10"));
        assertEquals(0, explain(log.toString()));
        assertTrue(text().contains("  2 x line 1: node1:7:8 [0] proxy.cc"), text());
        assertTrue(text().contains("  line 3: node2:9:10 [0] proxy.cc"), text());
        assertTrue(text().contains("== resource not released at exit: 3 warnings from pid 7 on node1, pid 9 on node2"), text());
    }

    @Test
    void aFifoAsTheLogIsRefusedInOneLine() throws Exception {
        Path fifo = Fifos.make(dir.resolve("job.log"));
        assertEquals(2, assertTimeoutPreemptively(Duration.ofSeconds(20), () -> explain(fifo.toString())));
        assertEquals("ncclguard explain: " + fifo + " is a FIFO, not a regular file: logs are read from regular files"
                + " (or - for standard input)\n", err());
    }

    @Test
    void aMegabyteLineIsReadInWellUnderASecond() throws Exception {
        // before: the prefix pattern retried at every position of the line, quadratic: 38 s for 100 KB
        Path log = dir.resolve("long.log");
        String filler = "a".repeat(1 << 20);
        Files.writeString(log, filler + "\n" + "x:1:2 [0] " + "b".repeat(600_000) + " NCCL WARN Timeout waiting"
                + " NCCL WARN again " + "NCCL ".repeat(80_000) + "\n" + WARN);
        explain(log.toString()); // the JIT's first pass
        long start = System.nanoTime();
        assertEquals(0, assertTimeoutPreemptively(Duration.ofSeconds(5), () -> explain(log.toString())));
        long ms = (System.nanoTime() - start) / 1_000_000;
        assertTrue(ms < 1000, ms + " ms");
        assertTrue(text().contains("2 NCCL warnings in 3 lines"), text());
        assertTrue(text().contains("characters)"), "a long line is shown cut: " + text());
    }

    @Test
    void aLineLongerThanAMebibyteIsReadUpToThereAndTheLinesAfterItStillCount() throws Exception {
        String huge = "h:1:2 [0] NCCL WARN Timeout waiting " + "z".repeat(3 << 20) + " NCCL WARN hidden past the cut";
        Path log = Files.writeString(dir.resolve("huge.log"), huge + "\r\n" + WARN.replace("\n", "\r\n") + "tail");
        assertEquals(0, explain(log.toString()));
        assertTrue(text().contains("2 NCCL warnings in 3 lines: 1 resource not released at exit, 1 network"), text());
        assertTrue(text().contains("  line 2: node1:7:8 [0] proxy.cc:1570 NCCL WARN [Service thread] Could not receive"
                + " type from localRank 1, res=3, closed=1\n"), "CRLF ends read as line ends: " + text());
    }

    @Test
    void linesThatLookLikeWarningsEverywhereStayLinear() throws Exception {
        // messages made of the patterns' own words, over and over: no pattern may retry them
        StringBuilder log = new StringBuilder();
        String words = "Connect to Failed to load Failed to open [Service thread] [Proxy Service 1] Failed to execute"
                + " operation ";
        for (int i = 0; i < 200; i++) {
            log.append("h:1:2 [0] net.cc:1 NCCL WARN ").append(words.repeat(500)).append('\n');
        }
        Path file = Files.writeString(dir.resolve("words.log"), log);
        explain(file.toString());
        long start = System.nanoTime();
        assertEquals(0, assertTimeoutPreemptively(Duration.ofSeconds(10), () -> explain(file.toString())));
        long ms = (System.nanoTime() - start) / 1_000_000;
        assertTrue(ms < 2000, ms + " ms for " + log.length() + " characters");
    }

    @Test
    void progressIsShownOnATerminalForALongReadAndOnlyThere() throws Exception {
        byte[] line = WARN.getBytes(StandardCharsets.UTF_8);
        assertEquals(0, explainWith(slow(line, 1500), true, "-"));
        assertTrue(err().contains("\rncclguard explain: reading standard input: "), err());
        assertTrue(err().endsWith("\r\u001b[K"), "the progress line is cleared at the end: " + err());
        assertEquals(0, explainWith(slow(line, 1500), false, "-"));
        assertEquals("", err());
        assertEquals(0, explainWith(slow(line, 1500), true, "--no-progress", "-"));
        assertEquals("", err());
    }

    /** An input of the same line over and over that lasts about {@code millis}: a slow pipe. */
    private static InputStream slow(byte[] line, long millis) {
        long end = System.nanoTime() + millis * 1_000_000;
        return new InputStream() {
            private int at;

            @Override
            public int read() {
                byte[] one = new byte[1];
                return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
            }

            @Override
            public int read(byte[] b, int off, int len) {
                if (System.nanoTime() > end) {
                    return -1;
                }
                try {
                    Thread.sleep(5);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                int n = 0;
                while (n < len) {
                    b[off + n++] = line[at];
                    at = (at + 1) % line.length;
                }
                return n;
            }
        };
    }
}
