package dev.ncclguard.catalog;

/**
 * What a native function does to the handles the tracker follows: which {@link Change} its success
 * makes. A new effect is a constant here; a new kind of change, a constant of Change and its
 * cases in the tracker.
 */
public enum Effect {
    /** ncclCommInitRank, InitRankConfig, InitRankScalable: one communicator out of a unique id. */
    COMM_CREATE(Change.NEW_COMMUNICATOR),
    /** ncclCommInitAll: ndev communicators of one clique, one per device. */
    COMM_CREATE_ALL(Change.NEW_CLIQUE),
    /** ncclCommSplit: a child communicator (or none, for NCCL_SPLIT_NOCOLOR). */
    COMM_SPLIT(Change.SPLIT_COMMUNICATOR),
    /** ncclCommShrink: a child communicator without the excluded ranks. */
    COMM_SHRINK(Change.SHRINK_COMMUNICATOR),
    /** ncclCommFinalize: a step before destroy, not an end. */
    COMM_FINALIZE(Change.FINALIZE_COMMUNICATOR),
    COMM_DESTROY(Change.RELEASE_COMMUNICATOR),
    COMM_ABORT(Change.RELEASE_COMMUNICATOR),
    /** Collectives, send and recv: work enqueued on a stream through a communicator. */
    COMM_ENQUEUE(Change.ENQUEUE_COLLECTIVE),
    EVENT_CREATE(Change.NEW_EVENT),
    EVENT_RECORD(Change.RECORD_EVENT),
    EVENT_QUERY(Change.COMPLETE_EVENT),
    EVENT_SYNC(Change.COMPLETE_EVENT),
    EVENT_DESTROY(Change.RELEASE_EVENT),
    STREAM_CREATE(Change.NEW_STREAM),
    STREAM_SYNC(Change.COMPLETE_STREAM),
    STREAM_QUERY(Change.COMPLETE_STREAM),
    /** cudaStreamWaitEvent: work (a wait) enqueued on a stream. */
    STREAM_WAIT_EVENT(Change.ENQUEUE_WAIT),
    STREAM_DESTROY(Change.RELEASE_STREAM),
    DEVICE_SYNC(Change.SYNCHRONIZE_DEVICE),
    SET_DEVICE(Change.SET_DEVICE),
    GROUP_START(Change.OPEN_GROUP),
    GROUP_END(Change.CLOSE_GROUP),
    /** ncclCommGrow (NCCL 2.29): a communicator of more ranks out of a parent, or out of the grow's id. */
    COMM_GROW(Change.GROW_COMMUNICATOR),
    /** ncclCommRevoke (NCCL 2.29): the communicator takes no more work, but still needs destroy or abort. */
    COMM_REVOKE(Change.REVOKE_COMMUNICATOR),
    /** ncclMemAlloc: device memory of NCCL's own, for registration and windows. */
    MEM_ALLOC(Change.NEW_MEMORY),
    MEM_FREE(Change.RELEASE_MEMORY),
    /** ncclCommRegister: a buffer registered with a communicator (NCCL's cache may hand out a handle again). */
    COMM_REGISTER(Change.REGISTER_BUFFER),
    COMM_DEREGISTER(Change.DEREGISTER_BUFFER),
    /** ncclCommWindowRegister: a window of a communicator over a buffer. */
    WINDOW_REGISTER(Change.REGISTER_WINDOW),
    WINDOW_DEREGISTER(Change.DEREGISTER_WINDOW),
    /** ncclDevCommCreate (NCCL 2.28): a device communicator of a communicator, an ncclDevComm struct filled in. */
    DEVCOMM_CREATE(Change.NEW_DEVICE_COMMUNICATOR),
    DEVCOMM_DESTROY(Change.RELEASE_DEVICE_COMMUNICATOR);

    private final Change change;

    Effect(Change change) {
        this.change = change;
    }

    /** What a successful call changes in what the tracker follows. */
    public Change change() {
        return change;
    }
}
