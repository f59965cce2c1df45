package dev.ncclguard.catalog;

/** The status codes of nccl.h and cuda_runtime_api.h that the agent reads. */
public final class Status {
    public static final int NCCL_SUCCESS = 0;
    /**
     * Nonblocking communicators: creation and finalize return this with the handle written, and a
     * release goes on inside NCCL.
     */
    public static final int NCCL_IN_PROGRESS = 7;
    public static final int CUDA_SUCCESS = 0;
    /** cudaEventQuery, cudaStreamQuery: the work is not complete yet. */
    public static final int CUDA_ERROR_NOT_READY = 600;

    private Status() {
    }
}
