package dev.ncclguard.samples.ep;

/**
 * A JNI library built as nvcc builds one by default, with the CUDA runtime linked in statically
 * (samples/src/main/c/scudart_runtime.c and the emulator's libcudart_static.a stand-in): its
 * stream and event reach the CUDA driver (libcuda.so.1) only through cuGetProcAddress.
 */
public final class ScudartRuntime {
    static final String LIBRARY = "dev/ncclguard/samples/ep/linux-x86_64/libscudart_runtime.so";
    /** A build of scudart_runtime.c of one's own (nvcc's on a GPU machine) instead of the jar's. */
    public static final String LIBRARY_PROPERTY = "ncclguard.samples.scudart.library";
    private static boolean loaded;

    private ScudartRuntime() {
    }

    /** A stream and an event; throws IllegalStateException when the runtime fails. */
    public static native long open();

    /** Records the event on the stream. */
    public static native int step(long runtime);

    /** Waits for the event and the stream, then releases both. */
    public static native int close(long runtime);

    /** Loads the library named by {@link #LIBRARY_PROPERTY}, else the jar's (extracted), once. */
    public static synchronized void load() {
        if (!loaded) {
            EpRuntime.loadLibrary(LIBRARY_PROPERTY, LIBRARY, "ncclguard-samples-scudart");
            loaded = true;
        }
    }
}
