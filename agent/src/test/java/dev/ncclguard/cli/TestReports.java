package dev.ncclguard.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ncclguard.catalog.Kind;
import dev.ncclguard.report.JsonReportWriter;
import dev.ncclguard.report.Report;
import dev.ncclguard.testkit.ReportJson;
import dev.ncclguard.testkit.SchemaCheck;
import dev.ncclguard.track.CommLife;
import dev.ncclguard.track.HandleView;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Reports for the command tests, written by the agent's own JSON writer: one process's ranks, each
 * with a communicator it released or left alive.
 */
final class TestReports {
    static final long T0 = 1_780_000_000_000L;

    private final long pid;
    private final String host;
    private final List<HandleView> leaks = new ArrayList<>();
    private final List<CommLife> comms = new ArrayList<>();
    private long writtenAt = 10_000;
    private Instant attachedAt;
    private Report.BeforeAttach beforeAttach;

    private TestReports(long pid, String host) {
        this.pid = pid;
        this.host = host;
    }

    static TestReports process(long pid, String host) {
        return new TestReports(pid, host);
    }

    static Throwable stack(String frame) {
        Throwable t = new Throwable();
        int dot = frame.lastIndexOf('.');
        String cls = frame.substring(0, dot);
        t.setStackTrace(new StackTraceElement[] {new StackTraceElement(cls, frame.substring(dot + 1),
                cls.substring(cls.lastIndexOf('.') + 1) + ".java", 42)});
        return t;
    }

    /** Rank {@code rank} of {@code commId}, created at T0+created ms, released at T0+released (0: never). */
    TestReports comm(String commId, int rank, int nranks, long handle, long created, long released) {
        comms.add(new CommLife(handle, "ncclCommInitRank", "rank-" + rank, rank, rank, nranks, commId, null,
                T0 + created, released == 0 ? 0 : T0 + released, released == 0 ? null : "ncclCommDestroy"));
        if (released == 0) {
            Map<String, Object> details = new LinkedHashMap<>();
            details.put("rank", rank);
            details.put("nranks", nranks);
            details.put("device", rank);
            details.put("commId", commId);
            leaks.add(new HandleView(Kind.COMM, handle, "ncclCommInitRank", "jna-interface", "rank-" + rank,
                    T0 + created, stack("com.example.Trainer.init"), rank, details, null));
        }
        return this;
    }

    /** When the report was written (its process's exit), T0+ms; 10 s unless said. */
    TestReports writtenAt(long ms) {
        writtenAt = ms;
        return this;
    }

    /** Made by an attach at T0+ms; RAS's answer then (null: none). */
    TestReports attached(long ms, Integer ranksHere, Integer commsInJob) {
        attachedAt = Instant.ofEpochMilli(T0 + ms);
        beforeAttach = new Report.BeforeAttach(ranksHere == null && commsInJob == null ? Report.BeforeAttach.UNAVAILABLE
                : Report.BeforeAttach.ANSWERED, commsInJob, ranksHere, "test");
        return this;
    }

    TestReports event(long handle, long created) {
        Map<String, Object> details = new LinkedHashMap<>();
        details.put("stream", "0x5000");
        details.put("device", 0);
        leaks.add(new HandleView(Kind.EVENT, handle, "cudaEventCreate", "jna-interface", "main", T0 + created,
                stack("com.example.Trainer.step"), 0, details, null));
        return this;
    }

    Report build() {
        return Report.builder().pid(pid).host(host).agentVersion("test")
                .startedAt(Instant.ofEpochMilli(T0)).writtenAt(Instant.ofEpochMilli(T0 + writtenAt))
                .communicators(comms.size(), comms.stream().filter(CommLife::released).count())
                .leaks(leaks).communicators(comms, 0).attached(attachedAt, beforeAttach).build();
    }

    /**
     * Adds {@code releaseStartedAt} (T0+ms) to the communicators entry of {@code handle}: when the
     * application's destroy was called, which reports may carry (docs/spec.md).
     */
    static void releaseStartedAt(Path report, long handle, long ms) throws IOException {
        releaseStartedAtUnchecked(report, handle, ms);
        SchemaCheck.assertValid(report);
    }

    private static void releaseStartedAtUnchecked(Path report, long handle, long ms) throws IOException {
        JsonNode root = ReportJson.tree(report);
        for (JsonNode c : root.path("communicators")) {
            if (c.path("handle").asText().equals("0x" + Long.toHexString(handle))) {
                ((ObjectNode) c).put("releaseStartedAt", Instant.ofEpochMilli(T0 + ms).toString());
            }
        }
        ReportJson.write(report, root);
    }

    /** Sets the {@code cleanup} word of the leak of {@code handle}, as a cleanup run writes it. */
    static void cleanup(Path report, long handle, String word) throws IOException {
        JsonNode root = ReportJson.tree(report);
        for (JsonNode l : root.path("leaks")) {
            if (l.path("handle").asText().equals("0x" + Long.toHexString(handle))) {
                ((ObjectNode) l).put("cleanup", word);
            }
        }
        ReportJson.write(report, root);
        SchemaCheck.assertValid(report);
    }

    /** Writes the report, checked against the published schema first. */
    Path write(Path dir, String name) throws IOException {
        String json = JsonReportWriter.toJson(build());
        SchemaCheck.assertValid(json, name);
        return writeUnchecked(dir, name, json);
    }

    /**
     * Writes a report without the schema check: hostile values (markup in a commId, say) that the
     * schema rightly refuses, or a report too big for the validator's tree.
     */
    Path writeUnvalidated(Path dir, String name) throws IOException {
        return writeUnchecked(dir, name, JsonReportWriter.toJson(build()));
    }

    private static Path writeUnchecked(Path dir, String name, String json) throws IOException {
        Path file = dir.resolve(name);
        Files.createDirectories(file.getParent());
        Files.writeString(file, json);
        return file;
    }
}
