package dev.ncclguard.track;

import static dev.ncclguard.track.FakeArgs.args;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ncclguard.catalog.Catalog;
import dev.ncclguard.catalog.Kind;
import dev.ncclguard.catalog.NativeFunction;
import dev.ncclguard.catalog.Status;
import java.lang.management.ManagementFactory;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Allocation, counted by the JVM per thread (com.sun.management.ThreadMXBean): the hot path must
 * allocate nothing, and what a live handle costs bounds its memory.
 */
class TrackerAllocationTest {
    private static final int CALLS = 100_000;
    /** What measuring itself may cost, far below one object per call. */
    private static final long SLACK_BYTES = 16 * 1024;

    private static final com.sun.management.ThreadMXBean THREADS =
            (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

    private static long allocated() {
        return THREADS.getThreadAllocatedBytes(Thread.currentThread().getId());
    }

    private static void requireMeasurable() {
        assertTrue(THREADS.isThreadAllocatedMemorySupported() && THREADS.isThreadAllocatedMemoryEnabled(),
                "this JVM does not count allocated bytes per thread");
    }

    @ParameterizedTest(name = "stacks={0}")
    @ValueSource(booleans = {true, false})
    void recordQueryAndAllReduceAllocateNothingGroupedOrNot(boolean stacks) {
        requireMeasurable();
        Tracker t = new Tracker(new Tracker.Config(stacks, System::currentTimeMillis));
        Driver d = new Driver(t);
        d.initRank(0xA000, 1, 0, Driver.uniqueId(1));
        d.streamCreate(0x5000);
        d.eventCreate(0xE000);
        NativeFunction record = Catalog.lookup("cudaEventRecord");
        NativeFunction query = Catalog.lookup("cudaEventQuery");
        NativeFunction allReduce = Catalog.lookup("ncclAllReduce");
        NativeFunction groupStart = Catalog.lookup("ncclGroupStart");
        NativeFunction groupEnd = Catalog.lookup("ncclGroupEnd");
        FakeArgs recordArgs = args().handle(0, 0xE000).handle(1, 0x5000);
        FakeArgs queryArgs = args().handle(0, 0xE000);
        FakeArgs allReduceArgs = args().handle(5, 0xA000).handle(6, 0x5000);
        FakeArgs legacyArgs = args().handle(5, 0xA000).handle(6, 0x0);

        for (int round = 0; round < 2; round++) { // the first round warms up (class loading, thread-locals)
            long before = allocated();
            for (int i = 0; i < CALLS; i++) {
                t.exit(allReduce, allReduceArgs, 0, t.enter(allReduce, allReduceArgs), "b", null);
                t.exit(allReduce, legacyArgs, 0, t.enter(allReduce, legacyArgs), "b", null);
                t.exit(record, recordArgs, 0, t.enter(record, recordArgs), "b", null);
                t.exit(query, queryArgs, 0, t.enter(query, queryArgs), "b", null);
                t.exit(query, queryArgs, Status.CUDA_ERROR_NOT_READY, t.enter(query, queryArgs), "b", null);
                t.exit(groupStart, queryArgs, 0, t.enter(groupStart, queryArgs), "b", null);
                t.exit(allReduce, allReduceArgs, 0, t.enter(allReduce, allReduceArgs), "b", null);
                t.exit(groupEnd, queryArgs, 0, t.enter(groupEnd, queryArgs), "b", null);
            }
            long bytes = allocated() - before;
            if (round == 1) {
                System.out.printf("hot path, stacks=%s: %d bytes for %d calls%n", stacks, bytes, 8L * CALLS);
                assertTrue(bytes < SLACK_BYTES, bytes + " bytes allocated by " + 8 * CALLS + " calls");
            }
        }
        assertEquals(0, t.snapshot().events().size());
        assertEquals(2, t.snapshot().streams().size(),
                "neither the legacy stream nor the grouped all-reduce after the last record was synchronized");
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"cudaEventCreate", "cudaStreamCreate", "ncclCommInitAll"})
    void aLiveHandleWithStacksOffCostsAtMost256Bytes(String create) {
        requireMeasurable();
        Tracker t = new Tracker(new Tracker.Config(false, System::currentTimeMillis));
        NativeFunction fn = Catalog.lookup(create);
        long[] out = new long[1];
        FakeArgs a = args().i(1, 1).outs(0, out);
        Driver warm = new Driver(new Tracker(new Tracker.Config(false, System::currentTimeMillis)));
        warm.eventCreate(1);
        warm.streamCreate(1);
        warm.call("ncclCommInitAll", args().outs(0, 1).i(1, 1));

        long before = allocated();
        for (int i = 1; i <= CALLS; i++) {
            long handle = 0x7f00_0000_0000L + 0x200L * i;
            out[0] = handle;
            a.out(0, handle);
            t.exit(fn, a, 0, t.enter(fn, a), "b", null);
        }
        long perHandle = (allocated() - before) / CALLS;
        System.out.printf("%s, stacks=off: %d bytes allocated per live handle%n", create, perHandle);
        assertEquals(CALLS, t.snapshot().live(fn.symbol().startsWith("nccl") ? Kind.COMM
                : fn.symbol().startsWith("cudaEvent") ? Kind.EVENT : Kind.STREAM));
        // all that was allocated, the map's outgrown tables included, bounds what stays live
        assertTrue(perHandle <= 256, perHandle + " bytes per handle");
    }
}
