package dev.ncclguard.bridge.interposer;

import java.util.ArrayList;
import java.util.List;

/**
 * A stand-in, for the C tests only, of the agent's class that libncclguard.so binds to: the JNI
 * natives it registers and the upcalls it makes, with the exact names and signatures of the
 * contract. It records what it is told; the agent's real class lives in agent/src/main/java.
 */
public final class Interposer {
    public static final long NOT_JAVAS = Long.MIN_VALUE + 1;

    // --- natives (JNI_OnLoad registers them) ---
    public static native boolean promote();
    public static native int patchImports();
    public static native String lastError();
    public static native void wrappedNatives(String[] names);
    public static native void suppressCallers(String[] names);
    public static native long slotToken(int fn, int slot);
    public static native long slotExit(int fn, int slot, long otherHandle, int status, long token);
    public static native long deviceSyncEnter(int device);
    public static native void deviceSyncExit(int device, long token);
    public static native void eventsPending(int[] slots, long[] out);
    public static native void streamsPending(int[] slots, long[] out);
    public static native int call(long caller, int fn, long a0, long a1, long a2, long a3);
    public static native void releaseSlot(int slot);
    public static native void dying();
    public static native boolean armExitWatchdog(long millis, int status);
    public static native void eventToJava(long handle);
    public static native boolean setEnv(String name, String value);
    public static native String callerLibrary(long caller);
    public static native String callerSymbol(long caller);
    public static native String callerBacktrace(long caller);
    public static native boolean userPlugin(String name);
    public static native int pluginInitsSince(long seq, long[] out);
    public static native int pluginComms(long[] out);
    public static native void pluginClaim(long record);
    public static native String pluginCommName(long record);
    public static native int inFlight(long record, long[] out);
    public static native String[] inFlightNames(long record);
    public static native void stats(long[] out);
    public static native int catalogSize();
    public static native String functionName(int fn);
    public static native int adoptEvents(long[] out);
    public static native int adoptEvent(long handle, long[] out);
    public static native long lazyLive();
    public static native void stackDepot(long max);
    public static native long[] stackFrameIds(int id);
    public static native Object[] nameFrames(long[] frames);
    public static native int vmFlag(String name);

    /** One upcall as the test saw it. */
    public record Upcall(String kind, String fn, long[] slots, int status, long token, long caller, int slot,
            String thread, boolean daemon, List<String> javaFrames) {
    }

    public static final List<Upcall> UPCALLS = new ArrayList<>();
    public static volatile boolean throwInExit;
    /** Upcalls do what the agent's would (a creating stack captured, unformatted), no more. */
    public static volatile boolean light;
    public static volatile Throwable lastStack;

    private static void record(String kind, int fn, long[] slots, int status, long token, long caller, int slot) {
        List<String> frames = new ArrayList<>();
        for (StackTraceElement e : new Throwable().getStackTrace()) {
            frames.add(e.getClassName() + "." + e.getMethodName());
        }
        Thread t = Thread.currentThread();
        synchronized (UPCALLS) {
            UPCALLS.add(new Upcall(kind, functionName(fn), slots, status, token, caller, slot, t.getName(), t.isDaemon(),
                    frames));
        }
    }

    // --- upcalls (C calls them) ---
    static long enter(int fn, long[] slots, long caller) {
        if (light) {
            return 42;
        }
        record("enter", fn, slots, 0, 0, caller, -1);
        return 42;
    }

    static boolean exit(int fn, long[] slots, int status, long token, long caller, int slot) {
        if (light) {
            lastStack = new Throwable("creation stack");
            return false;
        }
        record("exit", fn, slots, status, token, caller, slot);
        if (throwInExit) {
            throw new IllegalStateException("thrown in an upcall");
        }
        return slot >= 0;
    }

    static long hotEnter(int fn, long handle, long stream, long caller) {
        record("hotEnter", fn, new long[] {handle, stream}, 0, 0, caller, -1);
        return NOT_JAVAS;
    }

    static void hotExit(int fn, long handle, long stream, int status, long token, long caller) {
        record("hotExit", fn, new long[] {handle, stream}, status, token, caller, -1);
    }

    static boolean seen(int fn, long handle, int device, int slot, long caller) {
        record("seen", fn, new long[] {handle, device}, 0, 0, caller, slot);
        return true;
    }

    static void pluginInit(long record) {
        record("pluginInit", 0, new long[] {record}, 0, 0, 0, -1);
    }
}
