package dev.ncclguard.track;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The records' own locks (one atomic instruction), the lock-free reads of an event's last record
 * between two versions, and the compare-and-set completions, under threads that race on one
 * record. Each test checks an invariant that a plain lock-free write or an unvalidated read breaks;
 * a lock that two writers can hold at once may also leave the word held for good: the timeout.
 */
@Timeout(120)
class RecordLockStressTest {
    private static final int THREADS = 6;

    private static EventRecord event() {
        return new EventRecord(0x7f00_0000_1000L, 1, "cudaEventCreate", "test", "main", 0, null, 0, null);
    }

    private static StreamRecord stream(AtomicLong sequence, long handle) {
        return new StreamRecord(handle, 2, "cudaStreamCreate", "test", "main", 0, null, 0, null, sequence);
    }

    /** Runs {@code body(thread index)} on THREADS threads started together; rethrows the first failure. */
    private static void race(ThrowingIntConsumer body) throws Exception {
        CyclicBarrier start = new CyclicBarrier(THREADS);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < THREADS; t++) {
            int index = t;
            Thread thread = new Thread(() -> {
                try {
                    start.await();
                    body.accept(index);
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                }
            });
            threads.add(thread);
            thread.start();
        }
        for (Thread thread : threads) {
            thread.join();
        }
        if (failure.get() instanceof Error e) {
            throw e;
        }
        if (failure.get() instanceof Exception e) {
            throw e;
        }
    }

    interface ThrowingIntConsumer {
        void accept(int index) throws Exception;
    }

    /**
     * Writers record one event on three streams, each record's op number telling its stream
     * (op - base = k * 3 + stream index, the same base on each); completers complete whatever record is last. A completion
     * that read the stream of one record and the op number of another would mark an op of the
     * wrong residue done on some stream.
     */
    @Test
    void aCompletionNeverPairsOneRecordsStreamWithAnothersOpNumber() throws Exception {
        int streamsCount = 3;
        int records = 200_000;
        StreamRecord[] streams = new StreamRecord[streamsCount];
        for (int i = 0; i < streamsCount; i++) {
            // a sequence each: every stream has the same op numbers, so a wrong pair takes effect
            streams[i] = stream(new AtomicLong(), 0x7f00_0000_2000L + i);
            for (int n = 0; n < records + streamsCount; n++) {
                streams[i].enqueue(0); // op numbers up to every record's exist on every stream
            }
        }
        long[] bases = new long[streamsCount];
        for (int i = 0; i < streamsCount; i++) {
            bases[i] = streams[i].enqueued() - records - streamsCount;
        }
        EventRecord e = event();
        AtomicLong seqs = new AtomicLong();
        AtomicLong maxToken = new AtomicLong();
        AtomicBoolean writing = new AtomicBoolean(true);
        AtomicLong checks = new AtomicLong();
        race(t -> {
            if (t < 2) {
                long seq;
                while ((seq = seqs.incrementAndGet()) <= records) {
                    int i = (int) (seq % streamsCount);
                    e.recorded(streams[i], bases[i] + seq, seq);
                }
                writing.set(false);
                return;
            }
            while (writing.get()) {
                long token = e.lastRecordSeq();
                maxToken.accumulateAndGet(token, Math::max);
                e.completed(token);
                for (int i = 0; i < streamsCount; i++) {
                    long done = streams[i].enqueued() - streams[i].pendingOps() - bases[i];
                    long completedUpTo = maxToken.get(); // read after done: no smaller than what marked it
                    assertTrue(done == 0 || done % streamsCount == i,
                            "stream " + i + " marked done up to op " + done + ", another stream's record");
                    assertTrue(done <= completedUpTo,
                            "stream " + i + " marked done up to record " + done + ", none after " + completedUpTo
                                    + " was completed");
                    checks.incrementAndGet();
                }
            }
        });
        assertTrue(checks.get() > 0);
    }

    /**
     * One thread records and completes; the others complete records it made before. Once the
     * newest record's completion returned, no late completion of an older one may make the
     * event pending again (a plain store of the completed number after its check would).
     */
    @Test
    void aLateCompletionOfAnOlderRecordNeverMakesTheNewestPendingAgain() throws Exception {
        int rounds = 100_000;
        StreamRecord s = stream(new AtomicLong(), 0x7f00_0000_3000L);
        for (int n = 0; n < rounds; n++) {
            s.enqueue(0);
        }
        EventRecord e = event();
        AtomicLong newest = new AtomicLong();
        AtomicBoolean writing = new AtomicBoolean(true);
        race(t -> {
            if (t == 0) {
                try {
                    for (long seq = 1; seq <= rounds; seq++) {
                        e.recorded(s, seq, seq);
                        newest.set(seq);
                        e.completed(seq);
                        assertSame(EventRecord.NOT_PENDING, e.pendingOn(), "record " + seq + " seen complete");
                    }
                } finally {
                    writing.set(false);
                }
                return;
            }
            while (writing.get()) {
                long seq = newest.get();
                e.completed(seq - t % 2); // the newest, or the one before it
            }
        });
        assertSame(EventRecord.NOT_PENDING, e.pendingOn());
    }

    /** The count of a stream is exact under threads counting at once, and each record's number is its own. */
    @Test
    void opsCountedAtOnceOnOneStreamAreEachCountedOnceWithTheirOwnNumber() throws Exception {
        int perThread = 200_000;
        StreamRecord s = stream(new AtomicLong(), 0x7f00_0000_4000L);
        long base = s.enqueued();
        long[][] mine = new long[THREADS][perThread / 2];
        race(t -> {
            for (int n = 0; n < perThread; n++) {
                if (n % 2 == 0) {
                    s.enqueue(0);
                } else {
                    long at = s.enqueued();
                    // covers itself only when no other op came since at: its number is then at + 1
                    long op = s.enqueueRecord(0, at);
                    mine[t][n / 2] = op == at + 1 ? op : -1;
                }
            }
        });
        assertEquals(THREADS * (long) perThread, s.pendingOps());
        assertEquals(base + THREADS * (long) perThread, s.enqueued());
        java.util.Set<Long> numbers = new java.util.HashSet<>();
        for (long[] ops : mine) {
            for (long op : ops) {
                assertTrue(op == -1 || numbers.add(op), "op number " + op + " handed out twice");
            }
        }
    }

    /**
     * Op numbers are reserved in the global sequence ahead of use: a stream created after another
     * counted more ops than one reservation starts above all of them.
     */
    @Test
    void aNewStreamsNumbersStartAboveEveryOpCountedBeforeIt() {
        AtomicLong sequence = new AtomicLong();
        StreamRecord old = stream(sequence, 0x7f00_0000_5000L);
        for (long n = 0; n < StreamRecord.RESERVED + 10; n++) {
            old.enqueue(sequence.get());
        }
        StreamRecord later = stream(sequence, 0x7f00_0000_5000L);
        assertTrue(later.enqueued() > old.enqueued(),
                "base " + later.enqueued() + " is not above the earlier record's count " + old.enqueued());
        // a count read from the old record counts as unknown (the base) on the new one
        assertEquals(later.enqueued() + 1, later.enqueueRecord(1, old.enqueued()));
    }

    /** Concurrent completions raise the stream's done count only, to the highest op they cover. */
    @Test
    void completionsRacingEachOtherLeaveTheHighestOpDone() throws Exception {
        StreamRecord s = stream(new AtomicLong(), 0x7f00_0000_6000L);
        long base = s.enqueued();
        int ops = 100_000;
        for (int n = 0; n < ops; n++) {
            s.enqueue(0);
        }
        race(t -> {
            for (int n = t; n < ops; n += 1 + t) {
                s.markDone(base + ops - n); // from high to low: all but the first are stale
            }
        });
        assertEquals(0, s.pendingOps());
    }
}
