package dev.ncclguard.track;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A stream and how much of the work enqueued on it is known complete. Op numbers start at a
 * base taken from the tracker's global op sequence, so a number handed out by one record never
 * reaches into the range of a later record at the same address: each record reserves its op
 * numbers in the sequence, {@value #RESERVED} at a time, and a new record's base lies above every
 * reservation. So an op needs no step of the global sequence of its own (an atomic instruction).
 *
 * <p>Counting an op takes the record's own lock ({@link Tracked#lock}: one atomic instruction),
 * which keeps the count and the sequence number of the last op counted together for a device
 * synchronize. The completed count only grows, by compare and set, with no lock.
 */
final class StreamRecord extends Tracked {
    private static final VarHandle ENQUEUED;
    private static final VarHandle DONE;

    static {
        try {
            MethodHandles.Lookup lookup = MethodHandles.lookup();
            ENQUEUED = lookup.findVarHandle(StreamRecord.class, "enqueued", long.class);
            DONE = lookup.findVarHandle(StreamRecord.class, "done", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** Op numbers reserved at a time: the global sequence moves once per that many ops. */
    static final long RESERVED = 1 << 20;

    private final long base;
    private final AtomicLong sequence;
    /** The highest op number reserved; guarded by the lock. */
    private long reserved;
    /** Written under the lock with release stores (the lock orders the writers), read without it. */
    private volatile long enqueued;
    private volatile long done;
    /** The highest global op sequence number of the ops counted here; guarded by the lock. */
    private long lastSeq;

    /** @param sequence the tracker's global op sequence, where op numbers are reserved */
    StreamRecord(long handle, long serial, String api, String bridge, String thread, long createdAtMillis,
            Throwable creation, int device, NativeAccess access, AtomicLong sequence) {
        super(handle, serial, api, bridge, thread, createdAtMillis, creation, device, access);
        this.sequence = sequence;
        this.base = sequence.getAndAdd(RESERVED + 1) + 1;
        this.reserved = base + RESERVED;
        this.enqueued = base;
        this.done = base;
    }

    /** The next op number, reserved first if need be; under the lock. */
    private long next() {
        long n = (long) ENQUEUED.getOpaque(this) + 1;
        if (n > reserved) {
            reserved = reserve(sequence, n + RESERVED);
        }
        return n;
    }

    /** Moves the global sequence up to at least {@code upTo} (never down) and returns that. */
    private static long reserve(AtomicLong sequence, long upTo) {
        while (true) {
            long now = sequence.get();
            if (now >= upTo || sequence.compareAndSet(now, upTo)) {
                return upTo;
            }
        }
    }

    long enqueued() {
        return enqueued;
    }

    /**
     * Counts one op; {@code seq} is the global op sequence as it read after the op's call, for a
     * device synchronize (see {@link #deviceSynchronized}).
     */
    void enqueue(long seq) {
        lock();
        ENQUEUED.setRelease(this, next());
        lastSeq = Math.max(lastSeq, seq);
        unlock();
    }

    /**
     * Counts an event record and returns the op number its completion covers: the record itself
     * when no other op was counted since the call's enter ({@code countAtEnter}), else only the
     * ops counted before that enter, since the record's place among the racing ops is unknown.
     * A {@code countAtEnter} below our base (the stream was unknown at enter) counts as the base.
     */
    long enqueueRecord(long seq, long countAtEnter) {
        long atEnter = Math.max(countAtEnter, base);
        lock();
        long mine = next();
        ENQUEUED.setRelease(this, mine);
        lastSeq = Math.max(lastSeq, seq);
        unlock();
        long before = mine - 1;
        if (atEnter == before) {
            return before + 1;
        }
        return Math.min(before, atEnter);
    }

    /** Ops up to number {@code n} are complete. Numbers of another record fall below our base. */
    void markDone(long n) {
        while (true) {
            // done only grows: an op number it already covers changes nothing
            long d = done;
            if (n <= d || n > enqueued) {
                return;
            }
            if (DONE.compareAndSet(this, d, n)) {
                return;
            }
        }
    }

    /**
     * A device synchronize whose enter moved the global sequence to {@code seq} covers every op
     * counted with a smaller number: that op's call returned before the synchronize began. When
     * one op counted here came after, which ops were before is unknown: none is marked.
     */
    void deviceSynchronized(long seq) {
        long all;
        lock();
        boolean before = lastSeq < seq;
        all = enqueued;
        unlock();
        if (before) {
            markDone(all);
        }
    }

    /** Read done first: the count read after it is no smaller, since counts only grow. */
    long pendingOps() {
        long d = done;
        return enqueued - d;
    }
}
