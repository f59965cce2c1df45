package dev.ncclguard.catalog;

/**
 * The names of a leak's {@code details} in the report (docs/spec.md): the tracker and the bridges
 * write them, the report's writers and the commands read them.
 */
public final class DetailKeys {
    /** A communicator's rank, rank count, NCCL unique id (hex), node count (from NCCL's profiler). */
    public static final String RANK = "rank";
    public static final String NRANKS = "nranks";
    public static final String COMM_ID = "commId";
    public static final String NNODES = "nNodes";
    /** The communicator a device communicator belongs to, and the one a split or shrink was made from. */
    public static final String COMM = "comm";
    public static final String PARENT_COMM_ID = "parentCommId";
    /** The CUDA device of any kind of handle. */
    public static final String DEVICE = "device";
    /** The stream an event was last recorded on. */
    public static final String STREAM = "stream";
    /** Work enqueued on a stream after its last synchronization. */
    public static final String PENDING_OPS = "pendingOps";
    /** The exit probe's answer for an event or stream: still in flight at exit, or not; absent when unknown. */
    public static final String STILL_PENDING = "stillPending";
    /** A communicator that ncclCommFinalize was called on, or ncclCommRevoke. */
    public static final String FINALIZED = "finalized";
    public static final String REVOKED = "revoked";
    /** A communicator's collectives still in flight (NCCL's profiler): an object of counts. */
    public static final String IN_FLIGHT = "inFlight";
    /** The size of ncclMemAlloc's memory. */
    public static final String BYTES = "bytes";
    /** A communicator's buffer registrations and windows: objects of {@link #REGISTERED}, {@link #STILL_REGISTERED}, {@link #BYTES}. */
    public static final String REGISTRATIONS = "registrations";
    public static final String WINDOWS = "windows";
    public static final String REGISTERED = "registered";
    public static final String STILL_REGISTERED = "stillRegistered";
    /** The device communicators a communicator still has. */
    public static final String DEVICE_COMMUNICATORS = "deviceCommunicators";

    private DetailKeys() {
    }
}
