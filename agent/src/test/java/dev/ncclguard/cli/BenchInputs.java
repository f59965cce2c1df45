package dev.ncclguard.cli;

import dev.ncclguard.report.JsonReportWriter;
import dev.ncclguard.report.Report;
import dev.ncclguard.track.HandleView;
import dev.ncclguard.catalog.Kind;
import java.io.BufferedOutputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

/**
 * The inputs docs/performance.md measures the CLI on, made the same way each time (fixed seeds):
 * {@code log FILE MB} a job's log of NCCL INFO and WARN lines of 8 processes mixed with the
 * application's own; {@code report FILE LEAKS} a report of that many pending events made at one
 * place, written by the agent's own writer; {@code comms FILE N} a report of N leaked
 * communicators (a leak entry and a communicators entry each, some 560 bytes), written byte by
 * byte in seconds. Run with the test classpath:
 * {@code java -cp agent/target/test-classes:agent/target/classes dev.ncclguard.cli.BenchInputs log /tmp/job.log 150}.
 */
public final class BenchInputs {
    private BenchInputs() {
    }

    public static void main(String[] args) throws Exception {
        Path file = Path.of(args[1]);
        long n = Long.parseLong(args[2]);
        switch (args[0]) {
            case "log" -> log(file, n << 20);
            case "report" -> report(file, (int) n);
            case "comms" -> comms(file, n, null);
            default -> throw new IllegalArgumentException("log FILE MB | report FILE LEAKS | comms FILE COMMUNICATORS");
        }
    }

    private static final String[] INFO = {
        "NCCL INFO Channel 00/02 : 0 1 2 3 4 5 6 7",
        "NCCL INFO Connected all rings, use ring PXN 0 GDR 1",
        "NCCL INFO comm 0x55d1c2a0 rank %d nranks 8 cudaDev %d nvmlDev %d busId 1b000 commId 0x7c1b3a2f - Init COMPLETE",
        "NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB ib0:10.0.0.%d<0>",
        "NCCL INFO P2P Chunksize set to 524288",
        "NCCL INFO %d coll channels, %d collnet channels, 0 nvls channels, %d p2p channels, 2 p2p channels per peer",
    };
    private static final String[] WARN = {
        "NCCL WARN [Service thread] Connection closed by localRank %d",
        "NCCL WARN [Proxy Service %d] Failed to execute operation Close from rank %d, retcode 3",
        "NCCL WARN NET/IB : Got completion from peer 10.0.35.%d<49189> with status=12 opcode=0 len=0 vendor err 129 (Recv)",
        "NCCL WARN socketStartConnect: Connect to 10.0.35.%d<43781> failed : Software caused connection abort",
        "NCCL WARN Cuda failure 'driver shutting down'",
        "NCCL WARN Timeout waiting for connection from rank %d",
    };
    private static final String[] APP = {
        "2026-02-18 12:54:%02d INFO  trainer: step %d loss 2.%04d lr 0.000%d",
        "[1,%d]<stdout>: epoch %d batch %d throughput 1234.%d samples/s",
        "2026-02-18 12:54:%02d DEBUG dataloader: prefetched shard %d of %d (%d MB)",
    };

    /** About 75 bytes a line: 60 % NCCL INFO, 35 % the application's, 5 % NCCL WARN, from 8 processes on 2 hosts. */
    static void log(Path file, long bytes) throws Exception {
        Random r = new Random(42);
        long written = 0;
        try (OutputStream out = new BufferedOutputStream(Files.newOutputStream(file), 1 << 20)) {
            for (int p = 0; p < 8; p++) {
                written += line(out, "node" + p / 4 + ":" + (4100 + p) + ":" + (4100 + p) + " [" + p % 4
                        + "] NCCL INFO NCCL version 2.28.3+cuda13.0");
            }
            while (written < bytes) {
                int p = r.nextInt(8);
                String prefix = "node" + p / 4 + ":" + (4100 + p) + ":" + (4200 + r.nextInt(8)) + " [" + p % 4 + "] ";
                int kind = r.nextInt(100);
                String text;
                if (kind < 60) {
                    text = prefix + "init.cc:" + (100 + r.nextInt(900)) + " " + String.format(INFO[r.nextInt(INFO.length)],
                            r.nextInt(8), r.nextInt(8), r.nextInt(8));
                } else if (kind < 95) {
                    text = String.format(APP[r.nextInt(APP.length)], r.nextInt(60), r.nextInt(100_000),
                            r.nextInt(10_000), r.nextInt(10));
                } else {
                    text = prefix + "proxy.cc:" + (1500 + r.nextInt(100)) + " " + String.format(WARN[r.nextInt(WARN.length)],
                            r.nextInt(8), r.nextInt(8));
                }
                written += line(out, text);
            }
        }
    }

    private static int line(OutputStream out, String text) throws Exception {
        byte[] b = (text + "\n").getBytes(StandardCharsets.UTF_8);
        out.write(b);
        return b.length;
    }

    /** A report of {@code leaks} pending events created at one place (one shared stack, as the agent shares it). */
    static void report(Path file, int leaks) throws Exception {
        Throwable at = new Throwable();
        // one frame: about 400 bytes a leak, the size of the agent's own reports in issue 20
        at.setStackTrace(new StackTraceElement[] {
            new StackTraceElement("com.example.train.Loop", "step", "Loop.java", 87),
        });
        long t0 = 1_780_000_000_000L;
        List<HandleView> views = new ArrayList<>(leaks);
        Map<String, Object> details = new LinkedHashMap<>();
        details.put("stream", "0x7f3a2c00ab00");
        details.put("device", 0);
        for (int i = 0; i < leaks; i++) {
            views.add(new HandleView(Kind.EVENT, 0x7f3a00000000L + 0x40L * i, "cudaEventCreate", "jna-interface",
                    "train-loop", t0 + 1000 + i / 50, at, 0, details, null));
        }
        Report report = Report.builder().pid(4242).host("gpu-01").agentVersion("bench")
                .startedAt(Instant.ofEpochMilli(t0)).writtenAt(Instant.ofEpochMilli(t0 + 600_000))
                .communicators(0, 0).leaks(views).build();
        try (OutputStream out = new BufferedOutputStream(Files.newOutputStream(file), 1 << 20)) {
            JsonReportWriter.write(report, out);
        }
    }

    /**
     * A report of {@code n} communicators of one process, each leaked (its leak entry and its
     * communicators entry), created a millisecond apart at one of 4 places; {@code bigString}, when
     * not null, is one more leak's thread name. Written byte by byte: a million take seconds.
     */
    public static void comms(Path file, long n, String bigString) throws Exception {
        try (OutputStream out = new BufferedOutputStream(Files.newOutputStream(file), 1 << 20)) {
            StringBuilder b = new StringBuilder(1 << 16);
            b.append("{\n  \"schema\": \"ncclguard-report/1\",\n  \"agentVersion\": \"bench\",\n  \"pid\": 4242,\n")
                    .append("  \"host\": \"gpu-01\",\n  \"action\": \"report\",\n")
                    .append("  \"startedAt\": \"2026-01-01T00:00:00Z\",\n  \"writtenAt\": \"2026-01-02T00:00:00Z\",\n")
                    .append("  \"summary\": {\"commsCreated\": ").append(n).append(", \"commsReleased\": 0, \"leakedComms\": ")
                    .append(n).append(", \"pendingEvents\": 0, \"unsyncedStreams\": 0, \"cleaned\": 0, \"cleanupFailed\": 0},\n")
                    .append("  \"leaks\": [");
            for (long i = 0; i < n; i++) {
                b.append(i == 0 ? "\n    " : ",\n    ").append("{\"kind\": \"comm\", \"handle\": \"0x")
                        .append(Long.toHexString(0x7f0000000000L + i * 0x40)).append("\", \"api\": \"ncclCommInitRank\", ")
                        .append("\"bridge\": \"jna-interface\", \"thread\": \"");
                if (i == 0 && bigString != null) {
                    b.append(bigString);
                } else {
                    b.append("main");
                }
                b.append("\", \"createdAt\": \"");
                time(b, i);
                b.append("\", \"stack\": [\"com.example.Trainer.init").append(i % 4).append("(Trainer.java:60)\", ")
                        .append("\"com.example.Trainer.main(Trainer.java:12)\"], \"details\": {\"rank\": 0, \"nranks\": 1, ")
                        .append("\"device\": 0, \"commId\": \"");
                commId(b, i);
                b.append("\"}, \"cleanup\": \"none\"}");
                flush(out, b);
            }
            b.append("\n  ],\n  \"communicators\": [");
            for (long i = 0; i < n; i++) {
                b.append(i == 0 ? "\n    " : ",\n    ").append("{\"commId\": \"");
                commId(b, i);
                b.append("\", \"rank\": 0, \"nranks\": 1, \"device\": 0, \"handle\": \"0x")
                        .append(Long.toHexString(0x7f0000000000L + i * 0x40)).append("\", \"api\": \"ncclCommInitRank\", ")
                        .append("\"thread\": \"main\", \"createdAt\": \"");
                time(b, i);
                b.append("\", \"releasedAt\": null, \"releasedBy\": null, \"leaked\": true}");
                flush(out, b);
            }
            b.append("\n  ]\n}\n");
            flush(out, b);
            out.write(b.toString().getBytes(StandardCharsets.UTF_8));
        }
    }

    private static void commId(StringBuilder b, long i) {
        String hex = Long.toHexString(0xc0ffee0000000000L + i);
        b.append(hex);
    }

    /** 2026-01-01T00:00:01.000Z plus i ms, without a formatter. */
    private static void time(StringBuilder b, long i) {
        long ms = 1000 + i;
        long s = ms / 1000;
        b.append("2026-01-01T");
        two(b, s / 3600 % 24);
        b.append(':');
        two(b, s / 60 % 60);
        b.append(':');
        two(b, s % 60);
        b.append('.');
        long f = ms % 1000;
        b.append((char) ('0' + f / 100)).append((char) ('0' + f / 10 % 10)).append((char) ('0' + f % 10)).append('Z');
    }

    private static void two(StringBuilder b, long v) {
        b.append((char) ('0' + v / 10)).append((char) ('0' + v % 10));
    }

    private static void flush(OutputStream out, StringBuilder b) throws Exception {
        if (b.length() > 1 << 15) {
            out.write(b.toString().getBytes(StandardCharsets.UTF_8));
            b.setLength(0);
        }
    }
}
