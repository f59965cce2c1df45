package dev.ncclguard.track;

import java.util.concurrent.atomic.AtomicLongFieldUpdater;

/** A communicator from its creation to its destroy or abort. */
final class CommRecord extends Tracked {
    static final int UNKNOWN = -1;
    private static final AtomicLongFieldUpdater<CommRecord> RELEASE_STARTED =
            AtomicLongFieldUpdater.newUpdater(CommRecord.class, "releaseStartedAtMillis");

    /** The rank and size in this communicator; {@link #UNKNOWN} for split children. */
    final int rank;
    final int nranks;
    /**
     * NCCL's commId of the communicator (see {@link CommIds}); printed as 16 hex digits when
     * {@link #hasCommId}. Set before the record is published: NCCL's profiler plugin may correct it.
     */
    long commId;
    final long parentCommId;
    boolean hasCommId;
    final boolean hasParent;
    volatile boolean finalized;
    /** NCCL's profiler plugin's record of this communicator, claimed at its creation; 0 for none. */
    volatile long profilerRecord;
    /**
     * When the earliest application release still in flight was called (a destroy that waits for
     * other ranks, and an abort of it from another thread: the destroy's); 0 while none is.
     */
    private volatile long releaseStartedAtMillis;
    /** How many splits and shrinks of this communicator succeeded; guarded by this. */
    private int splits;
    private int shrinks;

    CommRecord(long handle, long serial, String api, String bridge, String thread, long createdAtMillis,
            Throwable creation, int device, NativeAccess access, int rank, int nranks,
            boolean hasCommId, long commId, boolean hasParent, long parentCommId) {
        super(handle, serial, api, bridge, thread, createdAtMillis, creation, device, access);
        this.rank = rank;
        this.nranks = nranks;
        this.hasCommId = hasCommId;
        this.commId = commId;
        this.hasParent = hasParent;
        this.parentCommId = parentCommId;
    }

    long releaseStartedAtMillis() {
        return releaseStartedAtMillis;
    }

    /** An application release was called: the first of those in flight sets the time. */
    void releaseStarted(long nowMillis) {
        RELEASE_STARTED.compareAndSet(this, 0, nowMillis);
    }

    /** A release failed: once none is in flight, the next one starts the clock again. */
    void releaseEnded() {
        if (!releaseInFlight()) {
            releaseStartedAtMillis = 0;
        }
    }

    synchronized int nextSplit() {
        return ++splits;
    }

    synchronized int nextShrink() {
        return ++shrinks;
    }
}
