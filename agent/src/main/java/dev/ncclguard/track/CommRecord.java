package dev.ncclguard.track;


/** A communicator from its creation to its destroy or abort. */
final class CommRecord extends Tracked {
    static final int UNKNOWN = -1;

    /** The rank and size in this communicator; {@link #UNKNOWN} for split children. */
    final int rank;
    final int nranks;
    /** 64 bits of the communicator's identity; printed as 16 hex digits when {@link #hasCommId}. */
    final long commId;
    final long parentCommId;
    final boolean hasCommId;
    final boolean hasParent;
    volatile boolean finalized;
    /** ncclCommRevoke succeeded: it takes no more work, and still needs destroy or abort. */
    volatile boolean revoked;
    /**
     * How many children of this communicator were asked for: splits (NCCL_SPLIT_NOCOLOR too) and
     * grows, as NCCL's childCount counts them; and shrinks. Guarded by this.
     */
    private int splits;
    private int shrinks;
    /**
     * NCCL's own identity of the communicator, where the agent can compute it as NCCL does
     * ({@link CommIds}): its bootstrap magic and commHash, from which a grow's commId follows on
     * every rank, new ones (who have only the grow's id) and existing ones alike.
     */
    final boolean hasNcclIdentity;
    final long ncclMagic;
    final long ncclHash;
    /** Registrations, windows and device communicators; made at the first. */
    private volatile CommResources resources;

    CommRecord(long handle, long serial, String api, String bridge, String thread, long createdAtMillis,
            Throwable creation, int device, NativeAccess access, int rank, int nranks,
            boolean hasCommId, long commId, boolean hasParent, long parentCommId) {
        this(handle, serial, api, bridge, thread, createdAtMillis, creation, device, access, rank, nranks, hasCommId,
                commId, hasParent, parentCommId, false, 0, 0);
    }

    CommRecord(long handle, long serial, String api, String bridge, String thread, long createdAtMillis,
            Throwable creation, int device, NativeAccess access, int rank, int nranks,
            boolean hasCommId, long commId, boolean hasParent, long parentCommId,
            boolean hasNcclIdentity, long ncclMagic, long ncclHash) {
        super(handle, serial, api, bridge, thread, createdAtMillis, creation, device, access);
        this.hasNcclIdentity = hasNcclIdentity;
        this.ncclMagic = ncclMagic;
        this.ncclHash = ncclHash;
        this.rank = rank;
        this.nranks = nranks;
        this.hasCommId = hasCommId;
        this.commId = commId;
        this.hasParent = hasParent;
        this.parentCommId = parentCommId;
    }

    /** Counts a split: NCCL's childCount after it, the same on every rank. */
    synchronized int nextSplit() {
        return ++splits;
    }

    /** A grow counts a child as a split does (one field less per communicator than counting apart). */
    synchronized int nextGrow() {
        return ++splits;
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

    synchronized int nextShrink() {
        return ++shrinks;
    }
}
