package dev.ncclguard.bridge;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ncclguard.bootstrap.NativeSink;
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

    /** A static native's arguments as its wrapper hands them over: the parameters, then receiver and result. */
    private static Object[] call(Object... params) {
        Object[] args = new Object[params.length + 2];
        System.arraycopy(params, 0, args, 0, params.length);
        return args;
    }

    @Test
    void aReleaseOfACommunicatorCleanupClaimedParks() {
        int init = site("ncclCommInitRank", "([JI[BI)I", 4);
        int destroy = site("ncclCommDestroy", "(J)I", 1);
        Object[] created = call(new long[] {0xA0}, 2, new byte[128], 0);
        bridge.exit(init, created, 0, bridge.enter(init, created));
        HandleView comm = tracker.snapshot().comms().get(0);
        assertEquals(0xA0, comm.handle());

        long token = bridge.enter(destroy, call(0xA0L));
        assertNotEquals(NativeSink.PARK, token, "not claimed yet: the release goes on");
        bridge.exit(destroy, call(0xA0L), 2, token); // ... and fails: the communicator is live again
        assertTrue(comm.claim().claimForCleanup());
        assertEquals(NativeSink.PARK, bridge.enter(destroy, call(0xA0L)));
    }
}
