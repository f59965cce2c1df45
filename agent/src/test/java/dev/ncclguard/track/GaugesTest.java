package dev.ncclguard.track;

import static dev.ncclguard.track.Driver.uniqueId;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The tracker's numbers for the live gauges, read from the records without a snapshot. */
class GaugesTest {
    private static final long THRESHOLD = 5_000;
    private final AtomicLong clock = new AtomicLong(1_000);
    private final Driver d = new Driver(new Tracker(new Tracker.Config(false, clock::get)));

    @Test
    void theOldestLiveCommunicatorIsTheEarliestCreatedStillAlive() {
        assertEquals(0, d.tracker.oldestLiveCommunicatorMillis(), "none alive");
        d.initRank(0xA000, 1, 0, uniqueId(1));
        clock.set(2_000);
        d.initRank(0xB000, 1, 0, uniqueId(2));
        assertEquals(1_000, d.tracker.oldestLiveCommunicatorMillis());
        d.destroy(0xA000);
        assertEquals(2_000, d.tracker.oldestLiveCommunicatorMillis());
    }

    @Test
    void anEventCountsOnceItsRecordWasSeenPendingForTheThreshold() {
        d.eventCreate(0xE000);
        d.record(0xE000, 0x5000);
        assertEquals(0, d.tracker.eventsPendingLongerThan(THRESHOLD), "first seen now: its clock starts");
        clock.addAndGet(THRESHOLD - 1);
        assertEquals(0, d.tracker.eventsPendingLongerThan(THRESHOLD));
        clock.addAndGet(1);
        assertEquals(1, d.tracker.eventsPendingLongerThan(THRESHOLD));
    }

    @Test
    void aNewRecordOfTheEventStartsItsClockAgain() {
        d.eventCreate(0xE000);
        d.record(0xE000, 0x5000);
        d.tracker.eventsPendingLongerThan(THRESHOLD);
        clock.addAndGet(THRESHOLD);
        d.record(0xE000, 0x5000);
        assertEquals(0, d.tracker.eventsPendingLongerThan(THRESHOLD));
    }

    @Test
    void anEventSeenCompleteIsNotPending() {
        d.eventCreate(0xE000);
        d.record(0xE000, 0x5000);
        d.tracker.eventsPendingLongerThan(THRESHOLD);
        clock.addAndGet(THRESHOLD);
        d.eventSync(0xE000);
        assertEquals(0, d.tracker.eventsPendingLongerThan(THRESHOLD));
    }

    @Test
    void streamOpsPendingSumsTheWorkNotSeenCompleteOnLiveStreams() {
        d.initRank(0xA000, 1, 0, uniqueId(1));
        d.streamCreate(0x5000);
        d.streamCreate(0x6000);
        d.allReduce(0xA000, 0x5000);
        d.allReduce(0xA000, 0x5000);
        d.allReduce(0xA000, 0x6000);
        assertEquals(3, d.tracker.streamOpsPending());
        d.streamSync(0x5000);
        assertEquals(1, d.tracker.streamOpsPending());
    }

    @Test
    void ncclsOwnInFlightCountIsUnknownUntilTheProfilerBridgeReportsIt() {
        assertEquals(-1, d.tracker.opsInFlight());
        d.tracker.inFlightSource(() -> 7);
        assertEquals(7, d.tracker.opsInFlight());
    }
}
