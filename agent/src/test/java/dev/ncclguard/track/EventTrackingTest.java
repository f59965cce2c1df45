package dev.ncclguard.track;

import static dev.ncclguard.track.Driver.NOT_READY;
import static dev.ncclguard.track.FakeArgs.args;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ncclguard.catalog.Kind;
import java.util.List;
import org.junit.jupiter.api.Test;

class EventTrackingTest {
    private static final long EVENT = 0xE000;
    private static final long STREAM = 0x5000;

    private final Driver d = new Driver(new Tracker());

    private List<HandleView> pendingEvents() {
        return d.tracker.snapshot().events();
    }

    private long pendingOps(long stream) {
        return d.tracker.snapshot().streams().stream().filter(s -> s.handle() == stream)
                .mapToLong(s -> (Long) s.details().get("pendingOps")).sum();
    }

    @Test
    void recordedEventNeverSeenCompleteIsALeakWithItsStreamAndDevice() {
        d.setDevice(1);
        d.call("cudaEventCreateWithFlags", args().out(0, EVENT).i(1, 2));
        d.streamCreate(STREAM);
        d.record(EVENT, STREAM);

        HandleView e = pendingEvents().get(0);
        assertEquals(Kind.EVENT, e.kind());
        assertEquals(EVENT, e.handle());
        assertEquals("cudaEventCreateWithFlags", e.api());
        assertEquals(List.of("stream", "device"), List.copyOf(e.details().keySet()));
        assertEquals("0x5000", e.details().get("stream"));
        assertEquals(1, e.details().get("device"));
        assertEquals(1, e.device());
    }

    @Test
    void createdButNeverRecordedEventIsNoLeak() {
        d.eventCreate(EVENT);
        assertTrue(pendingEvents().isEmpty());
        assertEquals(1, d.tracker.snapshot().liveEvents());
    }

    @Test
    void failedCreateIsNotTracked() {
        d.call("cudaEventCreate", args().out(0, EVENT), 2);
        assertEquals(0, d.tracker.snapshot().liveEvents());
    }

    @Test
    void eventSynchronizeCompletesTheLastRecord() {
        d.eventCreate(EVENT);
        d.record(EVENT, STREAM);
        d.eventSync(EVENT);
        assertTrue(pendingEvents().isEmpty());
    }

    @Test
    void failedEventSynchronizeCompletesNothing() {
        d.eventCreate(EVENT);
        d.record(EVENT, STREAM);
        d.call("cudaEventSynchronize", args().handle(0, EVENT), 700);
        assertEquals(1, pendingEvents().size());
    }

    @Test
    void eventQuerySuccessCompletesAndNotReadyDoesNot() {
        d.eventCreate(EVENT);
        d.record(EVENT, STREAM);
        d.eventQuery(EVENT, NOT_READY);
        assertEquals(1, pendingEvents().size());
        d.eventQuery(EVENT, 0);
        assertTrue(pendingEvents().isEmpty());
    }

    @Test
    void recordAfterCompletionIsPendingAgain() {
        d.eventCreate(EVENT);
        d.record(EVENT, STREAM);
        d.eventSync(EVENT);
        d.record(EVENT, STREAM);
        assertEquals(1, pendingEvents().size());
    }

    @Test
    void recordMadeWhileAQueryRunsIsNotMarkedCompleteByIt() {
        d.eventCreate(EVENT);
        d.record(EVENT, STREAM);
        FakeArgs query = args().handle(0, EVENT);
        long token = d.enter("cudaEventQuery", query);
        d.record(EVENT, STREAM); // another thread records between the query's enter and exit
        d.exit("cudaEventQuery", query, 0, token);
        assertEquals(1, pendingEvents().size());

        d.eventQuery(EVENT, 0);
        assertTrue(pendingEvents().isEmpty());
    }

    @Test
    void destroyEndsTrackingEvenWhenPending() {
        d.eventCreate(EVENT);
        d.record(EVENT, STREAM);
        d.eventDestroy(EVENT);
        assertTrue(pendingEvents().isEmpty());
        assertEquals(0, d.tracker.snapshot().liveEvents());
    }

    @Test
    void failedDestroyKeepsTheEvent() {
        d.eventCreate(EVENT);
        d.record(EVENT, STREAM);
        d.call("cudaEventDestroy", args().handle(0, EVENT), 400);
        assertEquals(1, pendingEvents().size());
    }

    @Test
    void destroyRacingWithReuseOfItsAddressEndsOnlyTheEventItSaw() {
        d.eventCreate(EVENT);
        FakeArgs destroy = args().handle(0, EVENT);
        long token = d.enter("cudaEventDestroy", destroy);
        d.call("cudaEventCreateWithFlags", args().out(0, EVENT));
        d.exit("cudaEventDestroy", destroy, 0, token);
        d.record(EVENT, STREAM);
        assertEquals("cudaEventCreateWithFlags", pendingEvents().get(0).api());
    }

    @Test
    void completionOfAnEventCompletesItsStreamsWorkUpToTheRecord() {
        d.initRank(0xA000, 1, 0, Driver.uniqueId(1));
        d.streamCreate(STREAM);
        d.eventCreate(EVENT);
        d.allReduce(0xA000, STREAM);
        d.record(EVENT, STREAM);
        d.allReduce(0xA000, STREAM);
        assertEquals(3, pendingOps(STREAM));
        d.eventSync(EVENT);
        assertEquals(1, pendingOps(STREAM), "the all-reduce after the record is still pending");
    }

    @Test
    void recordWithFlagsCountsLikeRecord() {
        d.eventCreate(EVENT);
        d.call("cudaEventRecordWithFlags", args().handle(0, EVENT).handle(1, STREAM).i(2, 1));
        assertEquals(1, pendingEvents().size());
        assertEquals(1, pendingOps(STREAM));
        d.eventQuery(EVENT, 0);
        assertEquals(0, pendingOps(STREAM));
    }

    @Test
    void failedRecordChangesNothing() {
        d.eventCreate(EVENT);
        d.streamCreate(STREAM);
        d.call("cudaEventRecord", args().handle(0, EVENT).handle(1, STREAM), 400);
        assertTrue(pendingEvents().isEmpty());
        assertEquals(0, pendingOps(STREAM));
    }

    @Test
    void recordRacingWithOtherWorkOnItsStreamCoversOnlyTheWorkBeforeIt() {
        d.initRank(0xA000, 1, 0, Driver.uniqueId(1));
        d.streamCreate(STREAM);
        d.eventCreate(EVENT);
        d.allReduce(0xA000, STREAM);
        FakeArgs record = args().handle(0, EVENT).handle(1, STREAM);
        long token = d.enter("cudaEventRecord", record);
        d.allReduce(0xA000, STREAM); // counted while the record runs: before or after it, unknown
        d.exit("cudaEventRecord", record, 0, token);
        d.eventSync(EVENT);
        assertEquals(2, pendingOps(STREAM), "only the all-reduce counted before the record's enter is done");
    }

    @Test
    void recordOfAnEventCreatedBeforeObservationStillCountsOnItsStream() {
        d.streamCreate(STREAM);
        d.record(0xEEEE, STREAM);
        assertTrue(pendingEvents().isEmpty());
        assertEquals(1, pendingOps(STREAM));
    }
}
