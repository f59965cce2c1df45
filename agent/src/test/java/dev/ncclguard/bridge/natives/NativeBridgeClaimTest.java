package dev.ncclguard.bridge.natives;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ncclguard.bootstrap.state.NativeSink;
import dev.ncclguard.catalog.Catalog;
import dev.ncclguard.track.HandleView;
import dev.ncclguard.track.Tracker;
import org.junit.jupiter.api.Test;

/** The wrapped-native bridges (JNI, JNA direct, JavaCPP) stop an application release of a claimed handle. */
class NativeBridgeClaimTest {
    private final Tracker tracker = new Tracker();
    private final NativeBridge bridge = new NativeBridge(tracker, "$$test$$");

    private int site(String symbol, String descriptor, int params) {
        return bridge.add(id -> new NativeSite(id, Catalog.lookup(symbol), NativeBridge.JNI, "Binding", null, symbol,
                descriptor, true, params, 'I', NativeSite.identity(params)));
    }

    /** ncclCommDestroy(long comm) as its wrapper calls in: the handle in the first slot. */
    private long destroyEnter(int site, long comm) {
        return bridge.enter(site, comm, null, 0, null, 0, null, 0, null, 0, null);
    }

    @Test
    void aReleaseOfACommunicatorCleanupClaimedParks() {
        int init = site("ncclCommInitRank", "([JI[BI)I", 4);
        int destroy = site("ncclCommDestroy", "(J)I", 1);
        long[] out = {0xA0};
        byte[] id = new byte[128];
        // ncclCommInitRank(comm*, nranks, id, rank) in its slots: out-array, 2, id, 0
        long initToken = bridge.enter(init, 0, out, 2, null, 0, id, 0, null, 0, null);
        bridge.exit(init, 0, out, 2, null, 0, id, 0, null, 0, null, 0, null, initToken);
        HandleView comm = tracker.snapshot().comms().get(0);
        assertEquals(0xA0, comm.handle());
        assertEquals(2, comm.details().get("nranks"));

        long token = destroyEnter(destroy, 0xA0L);
        assertNotEquals(NativeSink.PARK, token, "not claimed yet: the release goes on");
        // ... and fails: the communicator is live again
        bridge.exit(destroy, 0xA0L, null, 0, null, 0, null, 0, null, 0, null, 2, null, token);
        assertTrue(comm.claim().claimForCleanup());
        assertEquals(NativeSink.PARK, destroyEnter(destroy, 0xA0L));
    }
}
