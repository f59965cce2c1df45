package dev.ncclguard.catalog;

/** What a native function does to the handles the tracker follows. */
public enum Effect {
    /** ncclCommInitRank, InitRankConfig, InitRankScalable: one communicator out of a unique id. */
    COMM_CREATE,
    /** ncclCommInitAll: ndev communicators of one clique, one per device. */
    COMM_CREATE_ALL,
    /** ncclCommSplit: a child communicator (or none, for NCCL_SPLIT_NOCOLOR). */
    COMM_SPLIT,
    /** ncclCommShrink: a child communicator without the excluded ranks. */
    COMM_SHRINK,
    /** ncclCommFinalize: a step before destroy, not an end. */
    COMM_FINALIZE,
    COMM_DESTROY,
    COMM_ABORT,
    /** Collectives, send and recv: work enqueued on a stream through a communicator. */
    COMM_ENQUEUE,
    EVENT_CREATE,
    EVENT_RECORD,
    EVENT_QUERY,
    EVENT_SYNC,
    EVENT_DESTROY,
    STREAM_CREATE,
    STREAM_SYNC,
    STREAM_QUERY,
    /** cudaStreamWaitEvent: work (a wait) enqueued on a stream. */
    STREAM_WAIT_EVENT,
    STREAM_DESTROY,
    DEVICE_SYNC,
    SET_DEVICE,
    GROUP_START,
    GROUP_END
}
