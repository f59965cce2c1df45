package dev.ncclguard.track;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The snapshot lists leaks oldest first, and shares what events of one stream have in common. */
class SnapshotOrderTest {
    private final AtomicLong clock = new AtomicLong(1_000);
    private final Driver d = new Driver(new Tracker(new Tracker.Config(false, clock::incrementAndGet)));

    private static List<Long> handles(List<HandleView> views) {
        return views.stream().map(HandleView::handle).toList();
    }

    @Test
    void eventsAreListedInTheOrderOfTheirCreation() {
        List<Long> created = new ArrayList<>();
        Random random = new Random(7);
        for (int i = 0; i < 5_000; i++) {
            long event = 0x10_0000L + random.nextInt(1 << 30) * 16L; // addresses in no order
            if (!created.contains(event)) {
                d.eventCreate(event);
                d.record(event, 0x5000);
                created.add(event);
            }
        }

        assertEquals(created, handles(d.tracker.snapshot().events()));
    }

    @Test
    void eventsAreListedInCreationOrderWhenMostHandlesOfTheRunWereReleased() {
        List<Long> kept = new ArrayList<>();
        for (long event = 0xE000; event < 0xE000 + 20_000; event++) {
            d.eventCreate(event);
            if (event % 97 == 0) {
                d.record(event, 0x5000);
                kept.add(event);
            } else {
                d.eventDestroy(event); // serials far apart: the sort, not the slots
            }
        }

        assertEquals(kept, handles(d.tracker.snapshot().events()));
    }

    @Test
    void sortBySerialOrdersDenseAndSparseSerials() {
        for (long spread : new long[] {1, 3, 1_000}) {
            List<EventRecord> records = new ArrayList<>();
            for (int i = 0; i < 2_000; i++) {
                records.add(new EventRecord(i, 1 + i * spread, "cudaEventCreate", "b", "t", 0, null, 0, null));
            }
            List<EventRecord> expected = List.copyOf(records);
            Collections.shuffle(records, new Random(spread));

            Snapshots.sortBySerial(records);

            assertEquals(expected, records, "serials " + spread + " apart");
        }
    }

    @Test
    void eventsRecordedOnOneStreamShareTheirDetailsAndNameTheStreamForTheProbe() {
        d.streamCreate(0x5000);
        for (long event = 0xE000; event < 0xE010; event++) {
            d.eventCreate(event);
            d.record(event, event < 0xE008 ? 0x5000 : 0);
        }
        List<HandleView> events = d.tracker.snapshot().events();

        assertSame(events.get(0).details(), events.get(7).details());
        assertEquals(0x5000, events.get(0).recordedOn());
        assertEquals("0x0", events.get(8).details().get("stream"));
        assertEquals(0, events.get(8).recordedOn(), "the legacy default stream is another stream on another thread");
    }

    @Test
    void anEventsStreamThatWasDestroyedIsNotAskedForIt() {
        d.streamCreate(0x5000);
        d.eventCreate(0xE000);
        d.record(0xE000, 0x5000);
        d.streamDestroy(0x5000);
        d.streamCreate(0x5000); // the address handed out again: another stream

        HandleView event = d.tracker.snapshot().events().get(0);
        assertEquals("0x5000", event.details().get("stream"));
        assertEquals(0, event.recordedOn());
    }
}
