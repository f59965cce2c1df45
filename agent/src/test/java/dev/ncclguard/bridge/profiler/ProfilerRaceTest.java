package dev.ncclguard.bridge.profiler;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ncclguard.catalog.Catalog;
import dev.ncclguard.catalog.NativeFunction;
import dev.ncclguard.track.CallArgs;
import dev.ncclguard.track.TestCommIds;
import dev.ncclguard.track.HandleView;
import dev.ncclguard.track.Snapshot;
import dev.ncclguard.track.Tracker;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 34's false leaks replayed step by step, with a stand-in for the plugin's records: a
 * snapshot taken between NCCL's plugin init of a communicator and its bridge's claim (the create
 * call still in flight) listed the record as a communicator only NCCL saw (handle 0x0), which the
 * application then destroyed; and with one unique id for many communicators, a claim took another
 * thread's record and left its own to that thread, a ghost until it came.
 */
class ProfilerRaceTest {
    private static final String BRIDGE = "jna-interface";
    private static final int FINALIZED = 1;
    private static final int CLAIMED = 2;
    private static final int JAVA = 4;

    private final Tracker tracker = new Tracker(new Tracker.Config(false, System::currentTimeMillis));
    private final FakePlugin plugin = new FakePlugin();
    private final ProfilerBridge bridge = ProfilerBridge.over(tracker, plugin);
    /** Threads of their own: the common pool may have one, and a creation held in flight would starve it. */
    private final ExecutorService threads = Executors.newCachedThreadPool();

    @AfterEach
    void stopThreads() {
        threads.shutdownNow();
    }

    /** The plugin's records as the native part keeps them: 10 longs each, as Interposer says. */
    private static final class FakePlugin implements ProfilerBridge.PluginView {
        private final List<long[]> records = new ArrayList<>();

        /** NCCL's init of a communicator on the calling thread (a blocking init): the plugin's record. */
        synchronized long init(long commId, int rank, int nranks, long tid) {
            long id = records.size() + 1;
            records.add(new long[] {id, commId, rank, nranks, 1, id, System.currentTimeMillis(), JAVA, tid, 0});
            return id;
        }

        /** NCCL's finalize of it, inside the destroy. */
        synchronized void finalize(long id) {
            records.get((int) id - 1)[7] |= FINALIZED;
        }

        @Override
        public synchronized int initsSince(long seq, long[] out) {
            int n = 0;
            for (long[] r : records) {
                if (r[5] > seq) {
                    if ((n + 1) * 10 <= out.length) {
                        System.arraycopy(r, 0, out, n * 10, 10);
                    }
                    n++;
                }
            }
            return n;
        }

        @Override
        public synchronized int comms(long[] out) {
            int n = 0;
            for (long[] r : records) {
                if ((r[7] & FINALIZED) == 0) {
                    if ((n + 1) * 10 <= out.length) {
                        System.arraycopy(r, 0, out, n * 10, 10);
                    }
                    n++;
                }
            }
            return n;
        }

        @Override
        public synchronized void claim(long record) {
            records.get((int) record - 1)[7] |= CLAIMED;
        }

        @Override
        public int inFlight(long record, long[] out) {
            return 0;
        }

        @Override
        public String[] inFlightNames(long record) {
            return new String[0];
        }
    }

    /** ncclCommInitRank(comm, nranks, id, rank) and ncclCommDestroy(comm) as a Java bridge decodes them. */
    private record Args(long comm, int nranks, byte[] id, int rank) implements CallArgs {
        @Override
        public long handle(int index) {
            return index == 0 ? comm : 0;
        }

        @Override
        public long handleOut(int index) {
            return index == 0 ? comm : 0;
        }

        @Override
        public long handleOut(int index, int i) {
            return 0;
        }

        @Override
        public int intArg(int index) {
            return index == 1 ? nranks : index == 3 ? rank : 0;
        }

        @Override
        public int intArray(int index, int i, int fallback) {
            return fallback;
        }

        @Override
        public byte[] bytes(int index, int length) {
            return index == 2 ? id : null;
        }
    }

    private static NativeFunction fn(String symbol) {
        return Catalog.lookup(symbol);
    }

    private static byte[] uniqueId(int seed) {
        byte[] id = new byte[Catalog.UNIQUE_ID_BYTES];
        for (int i = 0; i < id.length; i++) {
            id[i] = (byte) (seed * 31 + i);
        }
        return id;
    }

    /** A single-rank ncclCommInitRank, stopped inside the call right after the plugin's init. */
    private final class Create {
        final Args args;
        final long token;
        final long record;

        Create(long comm, byte[] id) {
            args = new Args(comm, 1, id, 0);
            token = tracker.enter(fn("ncclCommInitRank"), args);
            record = plugin.init(TestCommIds.ofUniqueId(id), 0, 1, ProfilerBridge.threadId());
        }

        void returns() {
            tracker.exit(fn("ncclCommInitRank"), args, 0, token, BRIDGE, null);
        }
    }

    private void destroy(long comm, long record) {
        Args a = new Args(comm, 0, null, 0);
        long token = tracker.enter(fn("ncclCommDestroy"), a);
        plugin.finalize(record);
        tracker.exit(fn("ncclCommDestroy"), a, 0, token, BRIDGE, null);
    }

    /** The exit's snapshot, taken by another thread (the exit hook's) while this one is where it is. */
    private List<String> leaksFromAnotherThread() throws Exception {
        Snapshot s = CompletableFuture.supplyAsync(tracker::snapshot, threads).get(10, TimeUnit.SECONDS);
        return names(s.comms());
    }

    private static List<String> names(List<HandleView> comms) {
        return comms.stream().map(v -> v.hexHandle() + " " + v.bridge()).collect(Collectors.toList());
    }

    @Test
    void aSnapshotBetweenThePluginsInitAndTheBridgesClaimListsNoGhost() throws Exception {
        Create c = new Create(0xA000, uniqueId(1));
        // the exit's report now: NCCL has inited the communicator, the call has not returned
        assertEquals(List.of(), leaksFromAnotherThread(), "a creation in flight is nobody's leak yet");
        c.returns();
        assertEquals(List.of("0xa000 " + BRIDGE), leaksFromAnotherThread());
        destroy(0xA000, c.record);
        assertEquals(List.of(), leaksFromAnotherThread(), "destroyed by the application");
        assertEquals(0, tracker.snapshot().liveComms());
    }

    @Test
    void oneUniqueIdForManyCommunicatorsAClaimTakesTheCallingThreadsOwnRecord() throws Exception {
        byte[] shared = uniqueId(7);
        // this thread's init first, another's after: the newest record of that commId is the other's
        Create mine = new Create(0xA000, shared);
        CountDownLatch otherInited = new CountDownLatch(1);
        CountDownLatch otherMayReturn = new CountDownLatch(1);
        long[] otherRecord = new long[1];
        CompletableFuture<Void> other = CompletableFuture.runAsync(() -> {
            Create c = new Create(0xB000, shared);
            otherRecord[0] = c.record;
            otherInited.countDown();
            try {
                otherMayReturn.await(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            c.returns();
        }, threads);
        assertTrue(otherInited.await(10, TimeUnit.SECONDS));
        mine.returns();
        assertEquals(List.of("0xa000 " + BRIDGE), leaksFromAnotherThread(),
                "the other thread's creation is in flight: its record is its own, this one's is claimed");
        // the application destroys this one: NCCL finalizes this thread's record
        destroy(0xA000, mine.record);
        assertEquals(List.of(), leaksFromAnotherThread(), "no ghost of the destroyed communicator");
        otherMayReturn.countDown();
        other.get(10, TimeUnit.SECONDS);
        assertEquals(List.of("0xb000 " + BRIDGE), leaksFromAnotherThread());
        destroy(0xB000, otherRecord[0]);
        assertEquals(List.of(), leaksFromAnotherThread());
    }

    @Test
    void aCommunicatorOnlyNcclSawOnAnotherJavaThreadIsReportedWhileACreationIsInFlight() throws Exception {
        Create c = new Create(0xA000, uniqueId(1));
        long otherThread = ProfilerBridge.threadId() + 1_000_000; // no thread of this test
        plugin.init(0x1234, 0, 1, otherThread); // NCCL linked into a native library, on another Java thread
        assertEquals(List.of("0x0 " + ProfilerBridge.BRIDGE), leaksFromAnotherThread());
        c.returns();
        assertEquals(List.of("0xa000 " + BRIDGE, "0x0 " + ProfilerBridge.BRIDGE), leaksFromAnotherThread());
        assertEquals(0, bridge.unclaimedCounts()[1]);
    }
}
