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
    /** ncclCommRevoke succeeded: it takes no more work, and still needs destroy or abort. */
    volatile boolean revoked;
    /**
     * When the earliest application release still in flight was called (a destroy that waits for
     * other ranks, and an abort of it from another thread: the destroy's); 0 while none is.
     */
    private volatile long releaseStartedAtMillis;
    /**
     * NCCL's bootstrap magic, where {@link #commId} is NCCL's commHash as the agent computes it
     * ({@link CommIds}); 0 where it is not (a 64-bit hash is 0 once in 2^64: no flag of its own, so
     * the record stays within its 128 bytes). A grow's commId follows from it on every rank, new
     * ones (who have only the grow's id) and existing ones alike.
     */
    final long ncclMagic;
    /** Registrations, windows, device communicators and the child counts; made at the first. */
    private volatile CommResources resources;

    CommRecord(long handle, long serial, String api, String bridge, String thread, long createdAtMillis,
            Throwable creation, int device, NativeAccess access, int rank, int nranks,
            boolean hasCommId, long commId, boolean hasParent, long parentCommId) {
        this(handle, serial, api, bridge, thread, createdAtMillis, creation, device, access, rank, nranks, hasCommId,
                commId, hasParent, parentCommId, false, 0);
    }

    CommRecord(long handle, long serial, String api, String bridge, String thread, long createdAtMillis,
            Throwable creation, int device, NativeAccess access, int rank, int nranks,
            boolean hasCommId, long commId, boolean hasParent, long parentCommId,
            boolean hasNcclIdentity, long ncclMagic) {
        super(handle, serial, api, bridge, thread, createdAtMillis, creation, device, access);
        this.ncclMagic = hasNcclIdentity ? ncclMagic : 0;
        this.rank = rank;
        this.nranks = nranks;
        this.hasCommId = hasCommId;
        this.commId = commId;
        this.hasParent = hasParent;
        this.parentCommId = parentCommId;
    }

    /** Whether the agent knows NCCL's own identity of this communicator (its magic). */
    boolean hasNcclIdentity() {
        return ncclMagic != 0;
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

    /**
     * Counts a split: NCCL's childCount after it, the same on every rank. The counts live with the
     * registrations ({@link CommResources}, made at the first): most communicators never have a
     * child, and a live one stays within 256 bytes (TrackerAllocationTest).
     */
    int nextSplit() {
        return resources().nextChild();
    }

    /** A grow counts a child as a split does. */
    int nextGrow() {
        return resources().nextChild();
    }

    /** The registrations, windows and device communicators, null before the first. */
    CommResources resourcesOrNull() {
        return resources;
    }

    CommResources resources() {
        CommResources r = resources;
        if (r == null) {
            synchronized (this) {
                r = resources;
                if (r == null) {
                    r = new CommResources();
                    resources = r;
                }
            }
        }
        return r;
    }

    /** The agent's own count of shrinks (NCCL counts none), for the n-th shrink's commId. */
    int nextShrink() {
        return resources().nextShrink();
    }
}
