package dev.ncclguard.track;

import dev.ncclguard.bridge.NativeAccess;

/**
 * A stream and how much of the work enqueued on it is known complete. Op numbers start at a
 * base taken from the tracker's global op sequence, so a number handed out by one record never
 * reaches into the range of a later record at the same address.
 */
final class StreamRecord extends Tracked {
    private final long base;
    // written under this; enqueued and done are also read without the lock (enter, markDone)
    private volatile long enqueued;
    private volatile long done;
    /** The global op sequence number of the last op counted here. */
    private long lastSeq;

    StreamRecord(long handle, long serial, String api, String bridge, String thread, long createdAtMillis,
            Throwable creation, int device, NativeAccess access, long base) {
        super(handle, serial, api, bridge, thread, createdAtMillis, creation, device, access);
        this.base = base;
        this.enqueued = base;
        this.done = base;
    }

    long enqueued() {
        return enqueued;
    }

    /** Counts one op with global sequence number {@code seq}. */
    synchronized void enqueue(long seq) {
        enqueued++;
        lastSeq = seq;
    }

    /**
     * Counts an event record and returns the op number its completion covers: the record itself
     * when no other op was counted since the call's enter ({@code countAtEnter}), else only the
     * ops counted before that enter, since the record's place among the racing ops is unknown.
     * A {@code countAtEnter} below our base (the stream was unknown at enter) counts as the base.
     */
    synchronized long enqueueRecord(long seq, long countAtEnter) {
        long atEnter = Math.max(countAtEnter, base);
        long before = enqueued;
        enqueued++;
        lastSeq = seq;
        if (atEnter == before) {
            return enqueued;
        }
        return Math.min(before, atEnter);
    }

    /** Ops up to number {@code n} are complete. Numbers of another record fall below our base. */
    void markDone(long n) {
        // done only grows: an op number it already covers changes nothing, so no lock
        if (n <= done) {
            return;
        }
        synchronized (this) {
            if (n > done && n <= enqueued) {
                done = n;
            }
        }
    }

    /** A device synchronize that began at global sequence {@code seq} covers every op before it. */
    synchronized void deviceSynchronized(long seq) {
        if (lastSeq <= seq) {
            done = enqueued;
        }
    }

    synchronized long pendingOps() {
        return enqueued - done;
    }
}
