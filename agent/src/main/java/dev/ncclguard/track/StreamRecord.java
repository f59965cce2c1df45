package dev.ncclguard.track;

import dev.ncclguard.bridge.NativeAccess;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * A stream and how much of the work enqueued on it is known complete. Op numbers start at a
 * base taken from the tracker's global op sequence, so a number handed out by one record never
 * reaches into the range of a later record at the same address.
 */
final class StreamRecord extends Tracked {
    // Written under this with release stores, read without the lock too (enter, markDone). The
    // lock orders the writers; a volatile store's fence on top would cost more than the lock.
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

    private final long base;
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
        ENQUEUED.setRelease(this, enqueued + 1);
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
        ENQUEUED.setRelease(this, before + 1);
        lastSeq = seq;
        if (atEnter == before) {
            return before + 1;
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
                DONE.setRelease(this, n);
            }
        }
    }

    /** A device synchronize that began at global sequence {@code seq} covers every op before it. */
    synchronized void deviceSynchronized(long seq) {
        if (lastSeq <= seq) {
            DONE.setRelease(this, enqueued);
        }
    }

    synchronized long pendingOps() {
        return enqueued - done;
    }
}
