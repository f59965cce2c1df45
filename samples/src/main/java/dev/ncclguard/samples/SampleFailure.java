package dev.ncclguard.samples;

import java.util.function.IntFunction;

/** A failed NCCL or CUDA call, a wrong result, or a missing library: the sample exits 1 with its message. */
public final class SampleFailure extends RuntimeException {
    private static final long serialVersionUID = 1L;
    /** cudaErrorNotReady: a query's "not yet", which is no failure. */
    private static final int CUDA_ERROR_NOT_READY = 600;

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

    /**
     * A CUDA query's answer: true when done (0), false when not yet (cudaErrorNotReady); any other
     * status fails {@code call} as {@link #check} does.
     */
    public static boolean done(int status, String call, IntFunction<String> errorString) {
        if (status == CUDA_ERROR_NOT_READY) {
            return false;
        }
        check(status, call, errorString);
        return true;
    }
}
