package dev.ncclguard.samples;

/** A failed NCCL or CUDA call, a wrong result, or a missing library: the sample exits 1 with its message. */
final class SampleFailure extends RuntimeException {
    private static final long serialVersionUID = 1L;

    SampleFailure(String message) {
        super(message);
    }
}
