package dev.ncclguard.track;

/**
 * Calls into the very library instance the application loaded, for the exit-time queries and the
 * cleanup. One instance per loaded library and bridge; the tracker keeps a reference per handle.
 */
public interface NativeAccess {
    /** Where the library came from, for the report (a file path, or a soname). */
    String library();

    /**
     * Calls {@code symbol} with handle and int arguments (each a {@code Long} handle, an
     * {@code Integer}, or a {@code byte[]}: a struct passed by pointer, these bytes its copy) and
     * returns its int status. Throws if the symbol cannot be called.
     */
    int call(String symbol, Object... args);

    /**
     * Why the agent cannot release handles reached through this access (it has no handle to
     * them), and what the application must do; null when it can. Cleanup leaves such a handle
     * alone with this note.
     */
    default String cannotRelease() {
        return null;
    }

    /** Whether {@link #call} reaches the CUDA runtime too (cleanup's cudaSetDevice), not only NCCL. */
    default boolean reachesCudaRuntime() {
        return false;
    }
}
