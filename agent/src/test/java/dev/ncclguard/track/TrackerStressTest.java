package dev.ncclguard.track;

import static dev.ncclguard.track.FakeArgs.args;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * 16 threads create and release communicators, events and streams through an allocator that
 * hands freed addresses straight back, and each release's address is freed before its exit runs:
 * a create of the reused address often runs between a release's native call and its exit. Some
 * handles are leaked on purpose; the snapshot must list exactly those.
 */
class TrackerStressTest {
    private static final int THREADS = 16;
    private static final int ITERATIONS = 3_000;

    /** Like a C allocator under load: the address freed last is the next one handed out. */
    static final class Allocator {
        private final ConcurrentLinkedDeque<Long> free = new ConcurrentLinkedDeque<>();
        private final AtomicLong fresh = new AtomicLong(0x7f00_0000_0000L);
        /** Addresses whose release has freed them but whose exit has not run yet. */
        final Set<Long> releasing = ConcurrentHashMap.newKeySet();
        final AtomicLong reusedBeforeReleaseExit = new AtomicLong();

        long take() {
            Long a = free.pollFirst();
            if (a == null) {
                return fresh.addAndGet(0x100);
            }
            if (releasing.contains(a)) {
                reusedBeforeReleaseExit.incrementAndGet();
            }
            return a;
        }

        boolean isFree(long address) {
            return free.contains(address);
        }

        void free(long address) {
            free.addFirst(address);
        }
    }

    /** What one thread leaked on purpose, and what it created and released. */
    static final class Expected {
        final List<Long> comms = new ArrayList<>();
        final List<Long> events = new ArrayList<>();
        final List<Long> streams = new ArrayList<>();
        long commsCreated;
        long commsReleased;
    }

    private final Driver d = new Driver(new Tracker(new Tracker.Config(false, System::currentTimeMillis)));
    private final Allocator allocator = new Allocator();

    /** enter, the native release (which frees the address), maybe a pause, exit. */
    private void release(String symbol, long handle, SplittableRandom random) {
        FakeArgs a = args().handle(0, handle);
        long token = d.enter(symbol, a);
        allocator.releasing.add(handle);
        allocator.free(handle);
        if (random.nextInt(4) == 0) {
            // often let another thread take the address and create on it before this exit
            for (int i = 0; i < 100 && allocator.isFree(handle); i++) {
                Thread.yield();
            }
        }
        d.exit(symbol, a, 0, token);
        allocator.releasing.remove(handle);
    }

    private void work(int seed, Expected expected) {
        SplittableRandom random = new SplittableRandom(seed);
        long comm = allocator.take();
        d.initRank(comm, THREADS, seed, Driver.uniqueId(0));
        long stream = allocator.take();
        d.streamCreate(stream);
        expected.commsCreated++;

        for (int i = 0; i < ITERATIONS; i++) {
            boolean leak = random.nextInt(60) == 0;
            switch (random.nextInt(3)) {
                case 0 -> {
                    long c = allocator.take();
                    d.initRank(c, THREADS, seed, Driver.uniqueId(i));
                    expected.commsCreated++;
                    if (random.nextBoolean()) {
                        d.call("ncclCommFinalize", args().handle(0, c));
                    }
                    if (leak) {
                        expected.comms.add(c);
                    } else {
                        release(random.nextBoolean() ? "ncclCommDestroy" : "ncclCommAbort", c, random);
                        expected.commsReleased++;
                    }
                }
                case 1 -> {
                    long e = allocator.take();
                    d.eventCreate(e);
                    boolean recorded = random.nextInt(4) != 0;
                    if (recorded) {
                        d.allReduce(comm, stream);
                        d.record(e, stream);
                    }
                    if (leak && recorded) {
                        expected.events.add(e);
                    } else {
                        if (recorded && random.nextBoolean()) {
                            d.eventQuery(e, Driver.NOT_READY);
                            if (random.nextBoolean()) {
                                d.eventSync(e);
                            } else {
                                d.eventQuery(e, 0);
                            }
                        }
                        // a created, never recorded event is no leak: release it or not
                        if (recorded || random.nextBoolean()) {
                            release("cudaEventDestroy", e, random);
                        }
                    }
                }
                default -> {
                    long s = allocator.take();
                    d.streamCreate(s);
                    d.allReduce(comm, s);
                    if (random.nextBoolean()) {
                        d.call("ncclSend", args().handle(4, comm).handle(5, s));
                    }
                    if (leak) {
                        expected.streams.add(s);
                    } else {
                        if (random.nextBoolean()) {
                            d.streamSync(s);
                        }
                        release("cudaStreamDestroy", s, random);
                    }
                }
            }
        }
        // the long-lived stream carried the leaked events' records: synchronize it, so only the
        // events stay leaked
        d.streamSync(stream);
        release("cudaStreamDestroy", stream, random);
        release("ncclCommDestroy", comm, random);
        expected.commsReleased++;
    }

    @Test
    void sixteenThreadsWithReusedAddressesLeaveExactlyTheLeakedHandles() throws Exception {
        List<Expected> expected = new ArrayList<>();
        List<Thread> threads = new ArrayList<>();
        CyclicBarrier start = new CyclicBarrier(THREADS + 1);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        for (int t = 0; t < THREADS; t++) {
            Expected e = new Expected();
            expected.add(e);
            int seed = t;
            Thread thread = new Thread(() -> {
                try {
                    start.await();
                    work(seed, e);
                } catch (Throwable x) {
                    failure.compareAndSet(null, x);
                }
            }, "stress-" + t);
            threads.add(thread);
            thread.start();
        }
        // snapshots taken while the threads run must not disturb them or fail
        AtomicBoolean running = new AtomicBoolean(true);
        CountDownLatch snapshotterDone = new CountDownLatch(1);
        AtomicLong snapshots = new AtomicLong();
        Thread snapshotter = new Thread(() -> {
            try {
                while (running.get()) {
                    d.tracker.snapshot();
                    snapshots.incrementAndGet();
                }
            } catch (Throwable x) {
                failure.compareAndSet(null, x);
            } finally {
                snapshotterDone.countDown();
            }
        });
        snapshotter.start();
        start.await();
        for (Thread thread : threads) {
            thread.join();
        }
        running.set(false);
        snapshotterDone.await();
        assertNull(failure.get());

        assertTrue(allocator.reusedBeforeReleaseExit.get() > 0, "the race under test happened");
        assertTrue(snapshots.get() > 0);

        Snapshot s = d.tracker.snapshot();
        assertEquals(count(expected, x -> x.comms), s.comms().size());
        assertEquals(count(expected, x -> x.events), s.events().size());
        assertEquals(count(expected, x -> x.streams), s.streams().size());
        assertEquals(handles(expected, x -> x.comms), handles(s.comms()), "leaked communicators");
        assertEquals(handles(expected, x -> x.events), handles(s.events()), "leaked events");
        assertEquals(handles(expected, x -> x.streams), handles(s.streams()), "unsynchronized streams");
        long created = expected.stream().mapToLong(x -> x.commsCreated).sum();
        long released = expected.stream().mapToLong(x -> x.commsReleased).sum();
        assertEquals(created, s.commsCreated());
        assertEquals(released, s.commsReleased());
        assertEquals(created - released, s.liveComms());
        assertEquals(0, s.internalErrors());
        System.out.printf("stress: %d comms created, %d addresses reused before their release's exit, "
                + "%d snapshots meanwhile, leaked: %d comms, %d events, %d streams%n", created,
                allocator.reusedBeforeReleaseExit.get(), snapshots.get(), s.comms().size(), s.events().size(),
                s.streams().size());
    }

    private static Set<Long> handles(List<Expected> expected, java.util.function.Function<Expected, List<Long>> kind) {
        Set<Long> all = new TreeSet<>();
        for (Expected e : expected) {
            all.addAll(kind.apply(e));
        }
        return all;
    }

    private static long count(List<Expected> expected, java.util.function.Function<Expected, List<Long>> kind) {
        return expected.stream().mapToLong(e -> kind.apply(e).size()).sum();
    }

    private static Set<Long> handles(List<HandleView> views) {
        return views.stream().map(HandleView::handle).collect(Collectors.toCollection(TreeSet::new));
    }
}
