package dev.ncclguard.samples;

/** A failed NCCL or CUDA call, a wrong result, or a missing library: the sample exits 1 with its message. */
public final class SampleFailure extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public SampleFailure(String message) {
        super(message);
    }
}
