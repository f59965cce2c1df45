package dev.ncclguard.bridge.interposer;

/**
 * The class libncclguard.so binds to (docs/design.md, "The native part's contract with Java"): its
 * JNI_OnLoad registers the natives below on this class, found through the loader that loaded the
 * library (the agent's), and calls the static upcalls. The upcalls hand over to the installed
 * {@link InterposerBridge} and {@link PluginInits}; before those exist, and whatever goes wrong,
 * they answer what "not tracked" means to C, and never throw.
 */
public final class Interposer {
    /** What {@link #hotEnter} answers for a handle the tracker does not follow either. */
    public static final long NOT_JAVAS = Long.MIN_VALUE + 1;
    /**
     * What {@link #call} answers for a CUDA runtime function that neither a loaded runtime nor the
     * driver (libcuda.so.1) can make: NG_NO_CUDA in ng_track.h.
     */
    public static final int NO_CUDA = -2;
    /** Slot ids of C stream slots carry this bit. */
    public static final int STREAM_SLOT_BIT = 1 << 30;
    /** Longs per record of {@link #pluginInitsSince} and {@link #pluginComms}. */
    public static final int PLUGIN_RECORD_LONGS = 10;
    /** Longs {@link #inFlight} fills. */
    public static final int IN_FLIGHT_LONGS = 6;

    /** Told of a profiler plugin init on a Java thread (bridge.profiler). */
    public interface PluginInits {
        void inited(long record);
    }

    static volatile InterposerBridge bridge;
    static volatile PluginInits pluginInits;

    private Interposer() {
    }

    /** Who hears of plugin inits from now on. */
    public static void pluginInits(PluginInits listener) {
        pluginInits = listener;
    }

    // --- natives (JNI_OnLoad registers them) ---

    static native boolean promote();

    /** The import slots of loaded libraries from now on (native-patch=on); objects patched now. */
    static native int patchImports();

    static native String lastError();

    static native void wrappedNatives(String[] names);

    static native void suppressCallers(String[] names);

    static native long slotToken(int fn, int slot);

    static native long slotExit(int fn, int slot, long otherHandle, int status, long token);

    static native long deviceSyncEnter(int device);

    static native void deviceSyncExit(int device, long token);

    static native void eventsPending(int[] slots, long[] out);

    static native void streamsPending(int[] slots, long[] out);

    static native int call(long caller, int fn, long a0, long a1, long a2, long a3);

    static native void releaseSlot(int slot);

    static native void dying();

    static native boolean armExitWatchdog(long millis, int status);

    static native void eventToJava(long handle);

    public static native boolean setEnv(String name, String value);

    static native String callerLibrary(long caller);

    static native String callerSymbol(long caller);

    static native String callerBacktrace(long caller);

    public static native boolean userPlugin(String name);

    public static native int pluginInitsSince(long seq, long[] out);

    public static native int pluginComms(long[] out);

    public static native void pluginClaim(long record);

    public static native String pluginCommName(long record);

    public static native int inFlight(long record, long[] out);

    public static native String[] inFlightNames(long record);

    static native void stats(long[] out);

    static native int catalogSize();

    static native int adoptEvents(long[] out);

    static native int adoptEvent(long handle, long[] out);

    static native long lazyLive();

    static native void stackDepot(long max);

    /** Stack {@code id}'s frames, a jmethodID and a bytecode index each (two longs); null if unknown. */
    static native long[] stackFrameIds(int id);

    /** Those frames named: {Class[] (null: unloaded), String[] methods, String[] descriptors, String[] files, int[] lines}. */
    static native Object[] nameFrames(long[] frames);

    /** A bool -XX flag of HotSpot's: 1 on, 0 off, -1 no such flag (or not HotSpot). */
    static native int vmFlag(String name);

    static native String functionName(int fn);

    // --- upcalls (C calls them, on the calling thread) ---

    static long enter(int fn, long[] slots, long caller) {
        InterposerBridge b = bridge;
        return b == null ? 0 : b.enter(fn, slots, caller);
    }

    static boolean exit(int fn, long[] slots, int status, long token, long caller, int slot) {
        InterposerBridge b = bridge;
        return b != null && b.exit(fn, slots, status, token, caller, slot);
    }

    static long hotEnter(int fn, long handle, long stream, long caller) {
        InterposerBridge b = bridge;
        return b == null ? NOT_JAVAS : b.hotEnter(fn, handle, stream, caller);
    }

    static void hotExit(int fn, long handle, long stream, int status, long token, long caller) {
        InterposerBridge b = bridge;
        if (b != null) {
            b.hotExit(fn, handle, stream, status, token, caller);
        }
    }

    static boolean seen(int fn, long handle, int device, int slot, long caller) {
        InterposerBridge b = bridge;
        return b != null && b.seen(fn, handle, device, slot, caller);
    }

    static void pluginInit(long record) {
        PluginInits l = pluginInits;
        if (l != null) {
            try {
                l.inited(record);
            } catch (Throwable t) {
                // C clears it too; the init goes on either way
            }
        }
    }
}
