package dev.ncclguard.track;

import static dev.ncclguard.track.Driver.uniqueId;
import static dev.ncclguard.track.FakeArgs.args;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ncclguard.catalog.Kind;
import dev.ncclguard.catalog.Status;
import org.junit.jupiter.api.Test;

/** Who releases a handle at exit: the application or the cleanup, never both. */
class ReleaseClaimTest {
    private static final int NCCL_SYSTEM_ERROR = 2;
    private final Driver d = new Driver(new Tracker());

    private HandleView onlyComm() {
        return d.tracker.snapshot().comms().get(0);
    }

    private long enterDestroy(long comm) {
        return d.enter("ncclCommDestroy", args().handle(0, comm));
    }

    @Test
    void aClaimedCommunicatorsReleaseByTheApplicationIsStopped() {
        d.initRank(0xA0, 2, 0, uniqueId(1));
        assertTrue(onlyComm().claim().claimForCleanup());
        assertTrue(onlyComm().claim().claimedForCleanup());

        assertEquals(Tracker.CLAIMED_BY_CLEANUP, enterDestroy(0xA0));
        assertEquals(Tracker.CLAIMED_BY_CLEANUP, d.enter("ncclCommAbort", args().handle(0, 0xA0)));
    }

    @Test
    void aCommunicatorTheApplicationIsReleasingCannotBeClaimed() {
        d.initRank(0xA0, 2, 0, uniqueId(1));
        HandleView view = onlyComm();
        long token = enterDestroy(0xA0);
        assertNotEquals(Tracker.CLAIMED_BY_CLEANUP, token);

        assertFalse(view.claim().claimForCleanup());
    }

    @Test
    void anAbortFromAnotherThreadOfADestroyInProgressIsNoConflict() {
        d.initRank(0xA0, 2, 0, uniqueId(1));
        long destroy = enterDestroy(0xA0);
        long abort = d.enter("ncclCommAbort", args().handle(0, 0xA0));
        assertNotEquals(Tracker.CLAIMED_BY_CLEANUP, destroy);
        assertNotEquals(Tracker.CLAIMED_BY_CLEANUP, abort);
    }

    @Test
    void aFailedReleaseLeavesTheCommunicatorClaimable() {
        d.initRank(0xA0, 2, 0, uniqueId(1));
        d.call("ncclCommDestroy", args().handle(0, 0xA0), NCCL_SYSTEM_ERROR);

        assertEquals(1, d.tracker.snapshot().comms().size());
        assertTrue(onlyComm().claim().claimForCleanup());
    }

    @Test
    void aReleasedCommunicatorCanNeverBeClaimed() {
        d.initRank(0xA0, 2, 0, uniqueId(1));
        HandleView before = onlyComm();
        d.destroy(0xA0);

        assertFalse(before.claim().claimForCleanup());
    }

    @Test
    void aNonblockingReleaseInProgressStaysTheApplications() {
        d.initRank(0xA0, 2, 0, uniqueId(1));
        HandleView view = onlyComm();
        d.call("ncclCommDestroy", args().handle(0, 0xA0), Status.NCCL_IN_PROGRESS);

        assertFalse(view.claim().claimForCleanup());
    }

    @Test
    void eventsAreClaimedLikeCommunicators() {
        d.call("cudaEventCreate", args().out(0, 0xE0));
        d.call("cudaStreamCreate", args().out(0, 0x50));
        d.call("cudaEventRecord", args().handle(0, 0xE0).handle(1, 0x50));
        HandleView event = d.tracker.snapshot().events().get(0);
        assertTrue(event.claim().claimForCleanup());
        assertEquals(Tracker.CLAIMED_BY_CLEANUP, d.enter("cudaEventDestroy", args().handle(0, 0xE0)));

        d.call("cudaEventCreate", args().out(0, 0xE1));
        d.call("cudaEventRecord", args().handle(0, 0xE1).handle(1, 0x50));
        HandleView other = d.tracker.snapshot().events().stream().filter(v -> v.handle() == 0xE1).findFirst()
                .orElseThrow();
        d.call("cudaEventDestroy", args().handle(0, 0xE1), 400);
        assertTrue(other.claim().claimForCleanup(), "a failed destroy leaves the event claimable");
    }

    @Test
    void viewsMadeByHandAreAlwaysClaimable() {
        HandleView v = new HandleView(Kind.COMM, 1, "x", "y", "z", 0, null, 0, java.util.Map.of(), null);
        assertTrue(v.claim().claimForCleanup());
    }
}
