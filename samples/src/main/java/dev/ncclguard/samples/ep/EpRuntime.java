package dev.ncclguard.samples.ep;

import dev.ncclguard.samples.SampleFailure;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;

/**
 * A DeepEP-style runtime: its C library (samples/src/main/c/ep_runtime.c) uses NCCL and the CUDA
 * runtime itself; Java only opens it, dispatches work and closes it, and nothing here is named
 * after an NCCL function. The library links libnccl.so.2 and libcudart.so.13 by soname; the
 * caller has loaded the files it chose under those sonames first ({@link #load}). Failures come
 * as IllegalStateException with the failed call and its status.
 */
public final class EpRuntime {
    static final String LIBRARY = "dev/ncclguard/samples/ep/linux-x86_64/libep_runtime.so";
    /** The same runtime linked with -z now -z relro: its import slots bound at load and read-only after. */
    static final String BIND_NOW_LIBRARY = "dev/ncclguard/samples/ep/linux-x86_64/libep_runtime_now.so";
    /** "true": load the -z now -z relro build. */
    public static final String BIND_NOW_PROPERTY = "ncclguard.samples.ep.bindNow";
    private static boolean loaded;

    private EpRuntime() {
    }

    /** A new group id (128 bytes), which every rank of one group passes to {@link #open}. */
    public static native byte[] newGroupId();

    /**
     * Joins the group as {@code rank} of {@code nranks} on {@code device}, with buffers of
     * {@code count} floats, and makes its stream and event; {@code onLibraryThread}: the library
     * joins the group on a thread of its own. Returns the runtime's handle.
     */
    public static native long open(byte[] groupId, int nranks, int rank, int device, int count, boolean onLibraryThread);

    /** Enqueues one step (an allreduce, then the runtime's event recorded after it); the steps so far. */
    public static native int dispatch(long runtime);

    /** Waits for the last step, checks its result, releases everything: -1, or the first wrong element. */
    public static native int close(long runtime);

    /** n events made in this one call, each recorded, all but the last destroyed (left to process exit); n. */
    public static native int timed(long runtime, int n);

    /** Whether the last step is done: cudaEventQuery on the runtime's event (0 done, 600 not yet). */
    public static native int poll(long runtime);

    /** Extracts the library from the jar (or class folder) and loads it, once. */
    public static synchronized void load() {
        if (!loaded) {
            loadLibrary(Boolean.getBoolean(BIND_NOW_PROPERTY) ? BIND_NOW_LIBRARY : LIBRARY, "ncclguard-samples-ep");
            loaded = true;
        }
    }

    /**
     * Loads the file the system property {@code ownProperty} names (a build of one's own, e.g. on a
     * GPU machine), else the jar's {@code resource}, extracted.
     */
    static void loadLibrary(String ownProperty, String resource, String prefix) {
        String own = System.getProperty(ownProperty);
        if (own != null) {
            System.load(Path.of(own).toAbsolutePath().toString());
        } else {
            loadLibrary(resource, prefix);
        }
    }

    static void loadLibrary(String resource, String prefix) {
        try (InputStream in = EpRuntime.class.getClassLoader().getResourceAsStream(resource)) {
            if (in == null) {
                throw new SampleFailure("the samples were built without the EP runtime's library (" + resource + ")");
            }
            // under its own name, in a directory of its own: reports name the library that called
            Path dir = Files.createTempDirectory(prefix);
            Path file = dir.resolve(resource.substring(resource.lastIndexOf('/') + 1));
            Files.copy(in, file, StandardCopyOption.REPLACE_EXISTING);
            file.toFile().deleteOnExit();
            dir.toFile().deleteOnExit();
            System.load(file.toString());
        } catch (IOException e) {
            throw new SampleFailure("cannot extract the EP runtime's library: " + e);
        }
    }
}
