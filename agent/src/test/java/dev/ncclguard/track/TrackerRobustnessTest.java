package dev.ncclguard.track;

import static dev.ncclguard.track.FakeArgs.args;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ncclguard.catalog.Catalog;
import dev.ncclguard.catalog.Kind;
import dev.ncclguard.catalog.NativeFunction;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class TrackerRobustnessTest {
    private final Driver d = new Driver(new Tracker());

    @Test
    void nullFunctionOrArgumentsAreIgnored() {
        Tracker t = d.tracker;
        NativeFunction destroy = Catalog.lookup("ncclCommDestroy");
        assertEquals(0, t.enter(null, args()));
        assertEquals(0, t.enter(destroy, null));
        t.exit(null, args(), 0, 0, null, null);
        t.exit(destroy, null, 0, 0, null, null);
        assertEquals(0, t.snapshot().internalErrors());
    }

    @Test
    void everyFunctionWithGarbageArgumentsAndStatusesNeverThrows() {
        SplittableRandom random = new SplittableRandom(7);
        int[] statuses = {0, 7, 600, 1, 5, -1, Integer.MIN_VALUE};
        for (int round = 0; round < 2_000; round++) {
            FakeArgs a = args();
            for (int i = 0; i < 8; i++) {
                a.handle(i, random.nextLong()).out(i, random.nextInt(4) == 0 ? 0 : random.nextLong())
                        .i(i, random.nextInt(4) == 0 ? random.nextInt() : random.nextInt(-3, 6));
                if (random.nextBoolean()) {
                    a.ints(i, random.ints(random.nextInt(5), -3, 6).toArray());
                    a.outs(i, random.longs(random.nextInt(5)).toArray());
                }
            }
            for (NativeFunction fn : Catalog.all()) {
                long token = assertDoesNotThrow(() -> d.tracker.enter(fn, a));
                int status = statuses[random.nextInt(statuses.length)];
                assertDoesNotThrow(() -> d.tracker.exit(fn, a, status, token ^ random.nextLong(3), null, null));
            }
        }
        Snapshot s = assertDoesNotThrow(d.tracker::snapshot);
        assertEquals(0, s.internalErrors(), String.valueOf(s.firstInternalError()));
    }

    @Test
    void initAllWithANegativeOrHugeDeviceCountCreatesNothing() {
        d.call("ncclCommInitAll", args().outs(0, 0xA000).i(1, -2));
        d.call("ncclCommInitAll", args().outs(0, 0xA000).i(1, Integer.MAX_VALUE));
        assertEquals(0, d.tracker.snapshot().commsCreated());
    }

    @Test
    void initAllSkipsEntriesLeftNull() {
        d.call("ncclCommInitAll", args().outs(0, 0xA000, 0).i(1, 3));
        assertEquals(1, d.tracker.snapshot().commsCreated());
    }

    @Test
    void shrinkWithAnUnreadableExcludeListLeavesRankOut() {
        d.initRank(0xA000, 4, 1, Driver.uniqueId(1));
        d.call("ncclCommShrink", args().handle(0, 0xA000).i(2, 2).out(3, 0xA100)); // list not readable
        d.shrink(0xA000, 0xA200, 0, 9); // rank 9 does not exist
        HandleView first = d.tracker.snapshot().comms().get(1);
        HandleView second = d.tracker.snapshot().comms().get(2);
        assertFalse(first.details().containsKey("rank"));
        assertFalse(second.details().containsKey("rank"));
        assertTrue(first.details().containsKey("commId"));
    }

    @Test
    void aFailureInsideTheTrackerIsCountedAndNeverReachesTheCaller() {
        RuntimeException boom = new IllegalStateException("broken bridge");
        CallArgs throwing = new CallArgs() {
            @Override
            public long handle(int index) {
                throw boom;
            }

            @Override
            public long handleOut(int index) {
                throw boom;
            }

            @Override
            public long handleOut(int index, int i) {
                throw boom;
            }

            @Override
            public int intArg(int index) {
                throw boom;
            }

            @Override
            public int intArray(int index, int i, int fallback) {
                throw boom;
            }

            @Override
            public byte[] bytes(int index, int length) {
                throw boom;
            }
        };
        NativeFunction destroy = Catalog.lookup("ncclCommDestroy");
        NativeFunction init = Catalog.lookup("ncclCommInitRank");
        assertEquals(0, d.tracker.enter(destroy, throwing));
        d.tracker.exit(init, throwing, 0, 0, "b", null);
        Snapshot s = d.tracker.snapshot();
        assertEquals(2, s.internalErrors());
        assertSame(boom, s.firstInternalError());

        d.initRank(0xA000, 1, 0, Driver.uniqueId(1));
        assertEquals(1, d.tracker.snapshot().comms().size(), "tracking goes on");
    }

    @Test
    void snapshotCountsLiveHandlesByKind() {
        d.initRank(0xA000, 1, 0, Driver.uniqueId(1));
        d.eventCreate(0xE000);
        d.eventCreate(0xE100);
        d.streamCreate(0x5000);
        Snapshot s = d.tracker.snapshot();
        assertEquals(1, s.live(Kind.COMM));
        assertEquals(2, s.live(Kind.EVENT));
        assertEquals(1, s.live(Kind.STREAM));
        assertEquals(1, s.leaks().size());
        assertTrue(s.hasLeaks());
    }
}
