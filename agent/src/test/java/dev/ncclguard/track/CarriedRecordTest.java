package dev.ncclguard.track;

import static dev.ncclguard.track.FakeArgs.args;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ncclguard.catalog.NativeFunction;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/**
 * Calls on handles passed by value (Tracker.onHandles) carry the record they found before the
 * native call to their exit: the outcome must be the one a lookup at the exit would give.
 */
class CarriedRecordTest {
    private static final long EVENT = 0xE000;
    private static final long STREAM = 0x5000;
    private static final long COMM = 0xA000;

    private final Driver d = new Driver(new Tracker());

    private long pendingOps(long stream) {
        return d.tracker.snapshot().streams().stream().filter(s -> s.handle() == stream)
                .mapToLong(s -> (Long) s.details().get("pendingOps")).sum();
    }

    @Test
    void queryOfAnEventReleasedWhileItRanCompletesNeitherTheOldNorTheNewRecordsWork() {
        d.streamCreate(STREAM);
        d.eventCreate(EVENT);
        d.record(EVENT, STREAM);
        NativeFunction query = Driver.fn("cudaEventQuery");
        Object found = d.tracker.find(query, EVENT, 0);
        assertNotNull(found);
        long token = d.tracker.token(query, found);
        // meanwhile another thread destroys the event, and the address comes back as a new event
        d.eventDestroy(EVENT);
        d.eventCreate(EVENT);
        d.record(EVENT, STREAM);
        d.tracker.exit(query, found, EVENT, 0, 0, token, Driver.BRIDGE, FakeArgs.ACCESS);

        assertEquals(1, d.tracker.snapshot().events().size(), "the new record was never seen complete");
        assertEquals(2, pendingOps(STREAM), "the old record's work is not known complete either");
    }

    @Test
    void recordOnAStreamReleasedWhileItRanCountsOnTheStreamNowAtTheAddress() {
        d.streamCreate(STREAM);
        d.eventCreate(EVENT);
        NativeFunction record = Driver.fn("cudaEventRecord");
        Object found = d.tracker.find(record, EVENT, STREAM);
        long token = d.tracker.token(record, found);
        d.call("cudaStreamDestroy", args().handle(0, STREAM));
        d.streamCreate(STREAM);
        d.tracker.exit(record, found, EVENT, STREAM, 0, token, Driver.BRIDGE, FakeArgs.ACCESS);

        assertEquals(1, pendingOps(STREAM));
        assertEquals("0x5000", d.tracker.snapshot().events().get(0).details().get("stream"));
        d.eventQuery(EVENT, 0);
        assertEquals(0, pendingOps(STREAM), "the event's completion covers the new stream's work");
    }

    @Test
    void workOnAStreamFoundBeforeTheCallNeedsNoHandleAtItsExitUnlessTheStreamEndedSince() {
        d.initRank(COMM, 1, 0, Driver.uniqueId(1));
        d.streamCreate(STREAM);
        NativeFunction allReduce = Driver.fn("ncclAllReduce");
        Object found = d.tracker.find(allReduce, COMM, STREAM);
        assertFalse(Tracker.exitReadsHandles(allReduce, found));
        d.tracker.exit(allReduce, found, Tracker.NOT_READ, Tracker.NOT_READ, 0, d.tracker.token(allReduce, found),
                Driver.BRIDGE, null);
        assertEquals(1, pendingOps(STREAM));

        d.call("cudaStreamDestroy", args().handle(0, STREAM));
        assertTrue(Tracker.exitReadsHandles(allReduce, found), "an ended record sends the exit to the lookup");
        assertTrue(Tracker.exitReadsHandles(allReduce, null));
    }

    @Test
    void collectiveOnTheLegacyStreamIsNotCarriedSinceItsKeyIsTheCommunicatorsDevice() {
        d.setDevice(1);
        d.initRank(COMM, 1, 0, Driver.uniqueId(1)); // on device 1
        d.setDevice(0);
        NativeFunction allReduce = Driver.fn("ncclAllReduce");
        assertNull(d.tracker.find(allReduce, COMM, 0));
        d.allReduce(COMM, 0);
        assertEquals(1, d.tracker.snapshot().streams().get(0).device());
    }

    @Test
    void workOnAThreadOutsideAGroupIsCountedAtOnceWhileAnotherThreadIsInOne() throws Exception {
        d.initRank(COMM, 1, 0, Driver.uniqueId(1));
        d.streamCreate(STREAM);
        d.call("ncclGroupStart", args());
        CompletableFuture.runAsync(() -> d.allReduce(COMM, STREAM)).get();
        assertEquals(1, pendingOps(STREAM));
        d.allReduce(COMM, STREAM);
        assertEquals(1, pendingOps(STREAM), "this thread's work waits for its group's end");
        d.call("ncclGroupEnd", args());
        assertEquals(2, pendingOps(STREAM));
    }
}
