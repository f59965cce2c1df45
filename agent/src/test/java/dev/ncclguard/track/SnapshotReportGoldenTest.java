package dev.ncclguard.track;

import static dev.ncclguard.track.FakeArgs.args;
import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import dev.ncclguard.report.JsonReportWriter;
import dev.ncclguard.report.Report;
import dev.ncclguard.testkit.ReportJson;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * A tracker's snapshot of every kind of leak (stacks=off, a clock of its own), written as the JSON
 * report, against the report the tracker's detail maps and the tree-of-maps writer produced
 * (golden/snapshot-small.json): same content, field order included.
 */
class SnapshotReportGoldenTest {
    @Test
    void snapshotReportHasTheContentOfTheDetailMapsAndTreeOfMapsWriter() throws IOException {
        AtomicLong clock = new AtomicLong(1_750_000_000_000L);
        Driver d = new Driver(new Tracker(new Tracker.Config(false, () -> clock.addAndGet(7))));
        d.initRank(0xA000, 2, 1, Driver.uniqueId(1));
        d.split(0xA000, 0, 0, 0xA100);
        d.call("ncclCommFinalize", args().handle(0, 0xA100));
        d.initRank(0xA200, 4, 3, Driver.uniqueId(2));
        d.destroy(0xA200);
        d.setDevice(1);
        d.streamCreate(0x5000);
        d.allReduce(0xA000, 0x5000);
        for (long e = 0xE000; e < 0xE004; e++) {
            d.eventCreate(e);
            d.record(e, e % 2 == 0 ? 0x5000 : 0);
        }
        d.eventQuery(0xE001, 0);
        Snapshot snapshot = d.tracker.snapshot();
        HandleView pending = snapshot.events().get(0);
        Report report = Report.builder().pid(1).host("h").agentVersion("t")
                .startedAt(Instant.ofEpochMilli(d.tracker.startedAtMillis()))
                .writtenAt(Instant.ofEpochMilli(clock.get()))
                .communicators(snapshot.commsCreated(), snapshot.commsReleased())
                .leaks(snapshot.leaks())
                .stillPending(Map.of(pending, true))
                .communicators(d.tracker.communicators(), d.tracker.communicatorsOmitted())
                .build();

        byte[] written = JsonReportWriter.toBytes(report);
        Path actual = Path.of("target", "golden-actual", "snapshot-small.json");
        Files.createDirectories(actual.getParent());
        Files.write(actual, written); // to diff against the golden file when this fails
        JsonNode expected;
        try (InputStream in = SnapshotReportGoldenTest.class.getResourceAsStream("/golden/snapshot-small.json")) {
            expected = ReportJson.tree(in.readAllBytes());
        }
        assertEquals(expected.toPrettyString(), ReportJson.tree(written).toPrettyString());
    }
}
