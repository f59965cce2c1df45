package dev.ncclguard.report;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import dev.ncclguard.catalog.Kind;
import dev.ncclguard.cleanup.LeakOutcome;
import dev.ncclguard.cleanup.Outcome;
import dev.ncclguard.config.Suppressions;
import dev.ncclguard.testkit.ReportJson;
import dev.ncclguard.track.CommLife;
import dev.ncclguard.track.HandleView;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The JSON report of a small report with every kind of field, against the one the tree-of-maps
 * writer produced before the streaming writer replaced it (golden/report-small.json): same content,
 * field order included.
 */
class ReportGoldenTest {
    static Report small() {
        Throwable setup = Views.stack("com.example.Train.setup", "com.example.Train.main");
        Throwable warmup = Views.stack("com.example.Warmup.init", "com.example.Train.main");
        HandleView comm = Views.comm(0x7f3a2c001200L, 0, 2, 0, "9f3c1a00000000aa", setup);
        HandleView suppressedComm = Views.comm(0x7f3a2c001300L, 1, 2, 1, "9f3c1a00000000bb", warmup);
        HandleView pending = Views.event(0x20, 0x99, setup);
        HandleView done = Views.event(0x21, 0x99, setup);
        HandleView unknown = Views.event(0x22, 0x98, null);
        HandleView stream = Views.stream(0x30, 4, null);
        String nasty = "quote\" backslash\\ tab\t nl\n ctl\u0001 ñ 日本 😀 sep\u2028 lone\uD83D end";
        HandleView odd = new HandleView(Kind.EVENT, 0xffffffffffffL, "cudaEventCreateWithFlags", "jni", nasty,
                Views.T0 + 999, Views.stack("com.example.Ünï\"code.run"), 3, Map.of("device", 3), null);
        List<CommLife> lives = List.of(
                new CommLife(0x7f3a2c001100L, "ncclCommInitRank", "main", 0, 0, 2, "9f3c1a00000000cc", null,
                        Views.T0 + 1, Views.T0 + 2_000, "ncclCommDestroy"),
                new CommLife(0x7f3a2c001200L, "ncclCommInitRank", "main", 0, 0, 2, "9f3c1a00000000aa", null,
                        Views.T0 + 0x7f3a2c001200L, 0, null),
                new CommLife(0x7f3a2c001300L, "ncclCommSplit", "rank-1", 1, -1, -1, null, "9f3c1a00000000aa",
                        Views.T0 + 0x7f3a2c001300L, 0, null));
        return Report.builder().action("cleanup").communicators(3, 1)
                .startedAt(Instant.parse("2025-06-01T10:00:00Z")).writtenAt(Instant.parse("2025-06-01T10:05:00.120Z"))
                .pid(4242).host("gpu-01").agentVersion("0.1.0")
                .leaks(List.of(comm, suppressedComm, pending, done, unknown, stream, odd))
                .stillPending(Map.of(pending, true, done, false, stream, false))
                .cleanup(Map.of(comm, new LeakOutcome(Outcome.ABORTED, "ncclCommDestroy returned 3"),
                        pending, new LeakOutcome(Outcome.TIMED_OUT, "still pending after 5000 ms"),
                        done, new LeakOutcome(Outcome.DESTROYED, null),
                        stream, new LeakOutcome(Outcome.SYNCHRONIZED, null)))
                .suppressions(Suppressions.of("test", Suppressions.parse(List.of("comm:Warmup.init"))))
                .communicators(lives, 5)
                .attached(Instant.parse("2025-06-01T09:59:59.001Z"), new Report.BeforeAttach(
                        Report.BeforeAttach.ANSWERED, 1, null, "RAS knew of 1 communicator"))
                .build();
    }

    @Test
    void smallReportHasTheContentOfTheTreeOfMapsWriter() throws IOException {
        byte[] written = JsonReportWriter.toBytes(small());
        Path actual = Path.of("target", "golden-actual", "report-small.json");
        Files.createDirectories(actual.getParent());
        Files.write(actual, written); // to diff against the golden file when this fails

        JsonNode expected;
        try (InputStream in = ReportGoldenTest.class.getResourceAsStream("/golden/report-small.json")) {
            expected = ReportJson.tree(in.readAllBytes());
        }
        assertEquals(expected.toPrettyString(), ReportJson.tree(written).toPrettyString());
    }
}
