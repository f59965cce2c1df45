package dev.ncclguard.track;

import static dev.ncclguard.track.Driver.uniqueId;
import static dev.ncclguard.track.FakeArgs.args;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** Tracker.communicators(): every communicator seen, released or not, for the report's list. */
class CommunicatorHistoryTest {
    private final AtomicLong clock = new AtomicLong(1_000);
    private final Driver d = new Driver(new Tracker(new Tracker.Config(true, clock::get)));

    @Test
    void releasedAndLiveCommunicatorsAreListedInCreationOrderWithHowTheyEnded() {
        clock.set(10_000);
        d.initRank(0xA000, 2, 0, uniqueId(7));
        clock.set(11_000);
        d.initRank(0xB000, 2, 1, uniqueId(7));
        clock.set(12_000);
        d.initRank(0xC000, 2, 0, uniqueId(8));
        clock.set(20_000);
        d.destroy(0xA000);
        clock.set(21_000);
        d.call("ncclCommAbort", args().handle(0, 0xC000));

        List<CommLife> all = d.tracker.communicators();
        assertEquals(3, all.size(), all.toString());
        CommLife a = all.get(0);
        assertEquals(0xA000, a.handle());
        assertEquals(0, a.rank());
        assertEquals(2, a.nranks());
        assertEquals(10_000, a.createdAtMillis());
        assertEquals(20_000, a.releasedAtMillis());
        assertEquals("ncclCommDestroy", a.releasedBy());
        assertTrue(a.released());
        CommLife b = all.get(1);
        assertEquals(1, b.rank());
        assertFalse(b.released());
        assertNull(b.releasedBy());
        assertEquals(a.commId(), b.commId(), "both ranks of one unique id");
        assertEquals("ncclCommAbort", all.get(2).releasedBy());
        assertEquals(21_000, all.get(2).releasedAtMillis());
        assertEquals(0, d.tracker.communicatorsOmitted());
    }

    @Test
    void releaseStartedAtIsWhenTheDestroyThatEndedItWasCalled() {
        d.initRank(0xA000, 2, 0, uniqueId(3));
        clock.set(5_000);
        FakeArgs destroy = args().handle(0, 0xA000);
        long token = d.enter("ncclCommDestroy", destroy);
        clock.set(9_500); // the destroy waited for a rank of another process
        d.exit("ncclCommDestroy", destroy, 0, token);
        CommLife a = d.tracker.communicators().get(0);
        assertEquals(5_000, a.releaseStartedAtMillis());
        assertEquals(9_500, a.releasedAtMillis());
    }

    @Test
    void aDestroyStillInFlightAtExitShowsWhenItWasCalled() {
        d.initRank(0xA000, 2, 0, uniqueId(3));
        clock.set(5_000);
        d.enter("ncclCommDestroy", args().handle(0, 0xA000));
        CommLife a = d.tracker.communicators().get(0);
        assertFalse(a.released());
        assertEquals(5_000, a.releaseStartedAtMillis());
    }

    @Test
    void anAbortFromAnotherThreadKeepsTheStartOfTheDestroyItEnded() {
        d.initRank(0xA000, 2, 0, uniqueId(3));
        clock.set(5_000);
        FakeArgs destroy = args().handle(0, 0xA000);
        long destroyToken = d.enter("ncclCommDestroy", destroy);
        clock.set(8_000);
        d.call("ncclCommAbort", args().handle(0, 0xA000));
        d.exit("ncclCommDestroy", destroy, 0, destroyToken);
        CommLife a = d.tracker.communicators().get(0);
        assertEquals("ncclCommAbort", a.releasedBy());
        assertEquals(5_000, a.releaseStartedAtMillis());
    }

    @Test
    void aFailedDestroyLeavesNoReleaseStartBehindForTheNextOne() {
        d.initRank(0xA000, 1, 0, uniqueId(1));
        clock.set(5_000);
        d.call("ncclCommDestroy", args().handle(0, 0xA000), 3);
        assertEquals(0, d.tracker.communicators().get(0).releaseStartedAtMillis());
        clock.set(7_000);
        d.destroy(0xA000);
        assertEquals(7_000, d.tracker.communicators().get(0).releaseStartedAtMillis());
    }

    @Test
    void failedDestroyLeavesTheCommunicatorAlive() {
        d.initRank(0xA000, 1, 0, uniqueId(1));
        d.call("ncclCommDestroy", args().handle(0, 0xA000), 3);
        assertFalse(d.tracker.communicators().get(0).released());
    }

    @Test
    void historyKeepsTheNewestReleasesAndCountsTheOthers() {
        ReleasedComms kept = new ReleasedComms(2);
        for (int i = 1; i <= 5; i++) {
            kept.add(new CommLife(i, "ncclCommInitRank", "main", 0, 0, 1, null, null, i, i + 1, "ncclCommDestroy"));
        }
        List<CommLife> list = kept.list();
        assertEquals(List.of(4L, 5L), list.stream().map(CommLife::handle).toList());
        assertEquals(3, kept.dropped());
    }
}
