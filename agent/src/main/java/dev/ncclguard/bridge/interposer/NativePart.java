package dev.ncclguard.bridge.interposer;

import dev.ncclguard.bridge.WrappedNatives;
import dev.ncclguard.catalog.Catalog;
import dev.ncclguard.log.Log;
import dev.ncclguard.track.Tracker;
import java.nio.file.Path;
import java.util.List;

/**
 * The agent's native part, libncclguard.so: loaded at start (premain, or an attach) before the
 * application's code runs, then, with option native=on, the interposer: the tracker learns of
 * NCCL and CUDA calls made in native code, and the library goes into the global scope so that
 * libraries loaded from then on bind their NCCL and cudart references to it. NCCL's profiler
 * plugin (bridge.profiler) is the same library. If the library cannot be extracted or loaded,
 * one line on stderr says so and what to do, and the Java bridges go on.
 */
public final class NativePart {
    private static volatile NativePart loaded;

    /**
     * How the library file is loaded for {@code from}'s class loader: System.load, or (JDK 24 and
     * later, where System.load from the agent's unnamed module prints the restricted-method
     * warning) the JDK's own loading for that loader, which System.load ends in.
     */
    public interface Loader {
        void load(Class<?> from, String path);
    }

    private final Path path;
    private volatile boolean interposing;
    private volatile boolean patching;

    private NativePart(Path path) {
        this.path = path;
    }

    /**
     * Loads the library once per JVM; null after one line saying why not and what to do.
     *
     * @param nativeDir the option native-dir: where to extract it, null for java.io.tmpdir
     * @param loader    how to load the file (null: System.load)
     */
    public static synchronized NativePart load(String nativeDir, Loader loader) {
        if (loaded != null) {
            return loaded;
        }
        NativeLibraryFile file = NativeLibraryFile.load(nativeDir, loader != null ? loader : NativeLibraryFile.SYSTEM_LOAD);
        if (file.failure() != null) {
            Log.warn("the native part is off: " + file.failure() + "; calls made in native code (JNI libraries"
                    + " such as a DeepEP-style runtime, NCCL linked statically) are not seen, the Java bridges go on"
                    + " (native=off,nccl-profiler=off turns the native part off without this line)");
            return null;
        }
        String mismatch = catalogMismatch();
        if (mismatch != null) {
            Log.warn("the native part is off: " + file.path() + " " + mismatch + "; the Java bridges go on");
            return null;
        }
        loaded = new NativePart(file.path());
        return loaded;
    }

    /** Null when the library's catalog is the agent's, function for function; else what differs. */
    private static String catalogMismatch() {
        try {
            if (Interposer.catalogSize() != Catalog.size()) {
                return "was built from a catalog of " + Interposer.catalogSize() + " functions, not the agent's "
                        + Catalog.size();
            }
            for (int i = 0; i < Catalog.size(); i++) {
                String name = Catalog.all().get(i).symbol();
                if (!name.equals(Interposer.functionName(i))) {
                    return "names function " + i + " " + Interposer.functionName(i) + ", not " + name;
                }
            }
            return null;
        } catch (LinkageError e) {
            return "registered no natives on " + Interposer.class.getName() + " (" + e + ")";
        }
    }

    /** The library's file: what NCCL_PROFILER_PLUGIN names. */
    public Path path() {
        return path;
    }

    /**
     * Option native=on: the tracker hears of native calls from now on, calls of the libraries
     * named in {@code suppressedLibraries} and of the JNI entry points the Java bridges wrap are
     * left out, and the library is promoted to the global scope; with {@code patch} (option
     * native-patch) the import slots of the libraries already loaded, and of those loaded later
     * through a patched dlopen, are pointed at it too. False after one line when the promotion
     * failed (the Java bridges and the profiler plugin go on).
     */
    public boolean interpose(Tracker tracker, List<String> suppressedLibraries, boolean patch) {
        InterposerBridge bridge = new InterposerBridge(tracker);
        tracker.nativeSlots(new CSlots(bridge));
        Interposer.bridge = bridge;
        Interposer.suppressCallers(suppressedLibraries.toArray(new String[0]));
        WrappedNatives.listen(new WrappedNatives.Listener() { // a class, not a lambda: premain
            @Override
            public void wrapped(String[] jniNames) {
                Interposer.wrappedNatives(jniNames);
            }
        });
        if (!Interposer.promote()) {
            Interposer.bridge = null;
            Log.warn("the native part does not see calls made in native code: " + Interposer.lastError()
                    + "; the Java bridges go on");
            return false;
        }
        interposing = true;
        if (patch) {
            try {
                Interposer.patchImports();
                patching = true;
            } catch (LinkageError e) {
                Log.warn("the native part does not patch loaded libraries (" + e + "); libraries loaded from now on"
                        + " are seen as before");
            }
        }
        return true;
    }

    /** Option stack-depot: the bound on distinct creating stacks of native creations (0: each takes an upcall). */
    public void stackDepot(long max) {
        Interposer.stackDepot(max);
    }

    public boolean interposing() {
        return interposing;
    }

    /** The JVM is exiting: from now on the library only forwards calls, and never calls into the JVM. */
    public void dying() {
        Interposer.dying();
    }

    /**
     * Starts a plain native thread that ends the process with {@code _exit(status)} in {@code millis}
     * ms, unless exit(3) ends it first: the libraries' exit handlers get that long. False when it
     * could not be started (a library without the native, or no thread), and nothing was armed.
     */
    public boolean armExitWatchdog(long millis, int status) {
        try {
            return Interposer.armExitWatchdog(millis, status);
        } catch (LinkageError e) {
            return false;
        }
    }

    /** What the native part reaches, in one line (the attach command prints it). */
    public String coverage(boolean attached) {
        if (!interposing) {
            return "calls made in native code (libncclguard.so): NOT seen (native=off, or the line on stderr)";
        }
        if (patching) {
            return "calls made in native code (libncclguard.so " + path + "): seen from libraries loaded from now on"
                    + (attached ? " and from those loaded before the attach (their handles made before it are"
                            + " unknown)" : "") + ", their import slots patched (native-patch=off turns that off)";
        }
        return "calls made in native code (libncclguard.so " + path + "): seen from libraries loaded "
                + (attached ? "after the attach (references bound before it are not; native-patch=off)"
                        : "from now on, through the global scope (native-patch=off)");
    }
}
