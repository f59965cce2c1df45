package dev.ncclguard.live;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ncclguard.cleanup.LeakOutcome;
import dev.ncclguard.cleanup.Outcome;
import dev.ncclguard.report.Report;
import dev.ncclguard.track.HandleView;
import dev.ncclguard.track.Snapshot;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class JfrEventsTest {
    @TempDir
    Path dir;

    private final Calls calls = new Calls();

    private List<RecordedEvent> record(Runnable work) throws Exception {
        Path file = dir.resolve("events.jfr");
        try (Recording recording = new Recording()) {
            for (String name : List.of("CommunicatorCreated", "CommunicatorReleased", "LeakFound", "CleanupAction")) {
                recording.enable("dev.ncclguard." + name);
            }
            recording.start();
            work.run();
            recording.stop();
            recording.dump(file);
        }
        return RecordingFile.readAllEvents(file);
    }

    private static List<RecordedEvent> named(List<RecordedEvent> events, String name) {
        return events.stream().filter(e -> e.getEventType().getName().equals("dev.ncclguard." + name)).toList();
    }

    @Test
    void communicatorCreatedAndReleasedAreRecordedWithTheirFields() throws Exception {
        List<RecordedEvent> events = record(() -> {
            calls.initRank(0x100, 2, 1);
            calls.destroy(0x100);
            calls.destroy(0x999); // never created: no event
        });
        List<RecordedEvent> created = named(events, "CommunicatorCreated");
        assertEquals(1, created.size(), events.toString());
        RecordedEvent c = created.get(0);
        assertEquals("0x100", c.getString("handle"));
        assertEquals("ncclCommInitRank", c.getString("api"));
        assertEquals(Calls.BRIDGE, c.getString("bridge"));
        assertEquals(1, c.getInt("rank"));
        assertEquals(2, c.getInt("nranks"));
        assertEquals(16, c.getString("commId").length());
        List<RecordedEvent> released = named(events, "CommunicatorReleased");
        assertEquals(1, released.size(), events.toString());
        assertEquals("0x100", released.get(0).getString("handle"));
        assertEquals("ncclCommDestroy", released.get(0).getString("api"));
    }

    @Test
    void exitReportRecordsLeakFoundPerLeakAndCleanupActionPerLeakActedOn() throws Exception {
        calls.initRank(0x100, 2, 0);
        calls.initRank(0x200, 2, 1);
        Snapshot snapshot = calls.tracker.snapshot();
        HandleView first = snapshot.comms().get(0);
        Report report = calls.state("action=cleanup", null).exitReport(snapshot, List.of(), Map.of(),
                Map.of(first, new LeakOutcome(Outcome.ABORTED, "destroy did not return")));

        List<RecordedEvent> events = record(() -> JfrEvents.exitReport(report));
        List<RecordedEvent> leaks = named(events, "LeakFound");
        assertEquals(2, leaks.size(), events.toString());
        assertEquals("comm", leaks.get(0).getString("kind"));
        assertTrue(leaks.get(0).getString("creationStack").contains(JfrEventsTest.class.getName()),
                leaks.get(0).getString("creationStack"));
        List<RecordedEvent> actions = named(events, "CleanupAction");
        assertEquals(1, actions.size(), "only the leak cleanup acted on: " + events);
        RecordedEvent aborted = actions.get(0);
        assertEquals(first.hexHandle(), aborted.getString("handle"));
        assertEquals("aborted", aborted.getString("outcome"));
        assertEquals("destroy did not return", aborted.getString("note"));
    }

    @Test
    void nothingIsBuiltWhenJfrDoesNotRecord() {
        assertFalse(new JfrEvents.CommunicatorCreated().isEnabled());
        assertFalse(new JfrEvents.LeakFound().isEnabled());
    }
}
