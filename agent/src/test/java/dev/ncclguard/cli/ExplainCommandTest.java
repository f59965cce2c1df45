package dev.ncclguard.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
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
        String[] all = new String[args.length + 1];
        all[0] = "explain";
        System.arraycopy(args, 0, all, 1, args.length);
        return Cli.run(all, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
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
    void unreadableLogIsAUsageErrorAndAMalformedReportFails() throws Exception {
        assertEquals(2, explain(dir.resolve("none.log").toString()));
        assertTrue(err.toString(StandardCharsets.UTF_8).startsWith("ncclguard explain: cannot read "), err.toString());
        Path log = log("two-process-exit.txt");
        Path bad = Files.writeString(dir.resolve("bad.json"), "{");
        assertEquals(1, explain(log.toString(), bad.toString()));
        assertTrue(text().contains("BAD   " + bad + ": truncated or malformed JSON"), text());
    }
}
