package dev.ncclguard.samples.ep;

/**
 * {@link EpRuntime} with NCCL inside its C library, as libtorch's C++ distributions carry it: the
 * same runtime (samples/src/main/c/ep_runtime.c) linked with the emulator's libnccl_static.a, its
 * NCCL symbols hidden, the CUDA runtime by soname. Nothing outside the library can see its NCCL
 * calls; NCCL's own profiler plugin still sees its communicators.
 */
public final class EpStaticRuntime {
    static final String LIBRARY = "dev/ncclguard/samples/ep/linux-x86_64/libep_runtime_static.so";
    /** The build with NCCL's API exported and a tail-called destroy in close (TAIL_CLOSE_PROPERTY). */
    static final String TAIL_LIBRARY = "dev/ncclguard/samples/ep/linux-x86_64/libep_runtime_static_tail.so";
    /**
     * A build of the runtime to load instead of the jar's (scripts/gpu/80-native.sh links one with
     * the GPU machine's own libnccl_static.a).
     */
    public static final String LIBRARY_PROPERTY = "ncclguard.samples.ep.staticLibrary";
    /**
     * "true": that build's close ends in a tail call of ncclCommDestroy (ep_runtime.c built with
     * EP_TAIL_CLOSE) and answers its status: 0 when all is right, else 1 + the first wrong element.
     * Without LIBRARY_PROPERTY, the jar's own such build is loaded: the emulator's NCCL linked in
     * with its API exported (libep_runtime_static_tail.so).
     */
    public static final String TAIL_CLOSE_PROPERTY = "ncclguard.samples.ep.tailClose";
    private static boolean loaded;

    private EpStaticRuntime() {
    }

    public static native byte[] newGroupId();

    public static native long open(byte[] groupId, int nranks, int rank, int device, int count, boolean onLibraryThread);

    public static native int dispatch(long runtime);

    public static native int poll(long runtime);

    public static native int close(long runtime);

    /** Extracts the library from the jar (or class folder) and loads it, once. */
    public static synchronized void load() {
        if (!loaded) {
            EpRuntime.loadLibrary(LIBRARY_PROPERTY, Boolean.getBoolean(TAIL_CLOSE_PROPERTY) ? TAIL_LIBRARY : LIBRARY,
                    "ncclguard-samples-ep-static");
            loaded = true;
        }
    }
}
