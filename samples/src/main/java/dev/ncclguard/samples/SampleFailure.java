package dev.ncclguard.samples;

import java.util.function.IntFunction;

/** A failed NCCL or CUDA call, a wrong result, or a missing library: the sample exits 1 with its message. */
public final class SampleFailure extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public SampleFailure(String message) {
        super(message);
    }

    /**
     * The one error check of every bridge: a status other than 0 (ncclSuccess, cudaSuccess) fails
     * {@code call}, named with the library's own text for it, which is asked for only then.
     */
    public static void check(int status, String call, IntFunction<String> errorString) {
        if (status != 0) {
            throw new SampleFailure(call + " failed: " + errorString.apply(status) + " (" + status + ")");
        }
    }
}
