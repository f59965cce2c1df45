package dev.ncclguard.bridge.interposer;

import dev.ncclguard.bridge.CallProtocol;
import dev.ncclguard.bridge.WrappedNatives;
import dev.ncclguard.catalog.Change;
import dev.ncclguard.catalog.NativeFunction;
import dev.ncclguard.log.Log;
import dev.ncclguard.track.NativeAccess;
import dev.ncclguard.track.Tracker;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The interposer bridge: the native library's upcalls, on the thread that made the NCCL or CUDA
 * call in native code, told to the tracker through the shared call protocol, labelled
 * {@value #BRIDGE}. Hot calls on handles the library follows itself (C slots) never come here;
 * those on the tracker's own handles do ({@link #hotEnter}/{@link #hotExit}), as do creations,
 * releases, device synchronizes and a stream or event C starts following ({@link #seen}).
 */
final class InterposerBridge {
    static final String BRIDGE = "native";
    private static final StackWalker WALKER = StackWalker.getInstance();
    private static final String OWN = InterposerBridge.class.getPackageName() + ".";

    private final Tracker tracker;
    private final CallProtocol calls;
    private final ConcurrentHashMap<Long, CallerAccess> accesses = new ConcurrentHashMap<>();
    /** The last call site asked for, as hot calls on the tracker's handles repeat one. */
    private volatile CallerAccess last;

    InterposerBridge(Tracker tracker) {
        this.tracker = tracker;
        this.calls = new CallProtocol(tracker, BRIDGE, false);
    }

    NativeAccess access(long caller) {
        CallerAccess a = last;
        if (a != null && a.caller() == caller) {
            return a;
        }
        a = accesses.computeIfAbsent(caller, CallerAccess::new);
        last = a;
        return a;
    }

    long enter(int fn, long[] slots, long caller) {
        try {
            NativeFunction f = SlotArgs.function(fn);
            if (f == null || slots == null || calledByWrappedNative()) {
                return 0;
            }
            SlotArgs args = new SlotArgs(slots, -1);
            tracker.threadDevice(args.device());
            return calls.enter(f, args);
        } catch (Throwable t) {
            Log.once("native-enter", "tracking failed in a native call, tracking goes on: " + t);
            return 0;
        }
    }

    boolean exit(int fn, long[] slots, int status, long token, long caller, int slot) {
        try {
            NativeFunction f = SlotArgs.function(fn);
            if (f == null || slots == null) {
                return false;
            }
            if (calledByWrappedNative()) {
                return false; // a JNI entry point a Java bridge wraps, through a helper of its own: that bridge tracks it
            }
            SlotArgs args = new SlotArgs(slots, slot);
            tracker.threadDevice(args.device());
            // a creation whose stack's depot id Java learned before (a virtual thread's creations,
            // which always come here; a thread's first at a known stack): that stack, no walk
            Throwable known = token != 0 && status == 0 && f.change() == Change.NEW_EVENT
                    ? tracker.learnedNativeStack((int) token) : null;
            calls.exit(f, args, status, token, BRIDGE, access(caller), known);
            if (slot < 0 || status != 0) {
                return false;
            }
            long handle = args.handleOut(f.handle());
            boolean held = tracker.holdsSlot(handle, slot);
            if (held && token != 0 && f.change() == Change.NEW_EVENT) {
                // a creation's token: its stack's depot id and its thread's id (ng_track.c)
                tracker.nativeStackLearned(handle, (int) token, (int) (token >>> 32));
            }
            return held;
        } catch (Throwable t) {
            Log.once("native-exit", "tracking failed in a native call, tracking goes on: " + t);
            return false;
        }
    }

    long hotEnter(int fn, long handle, long stream, long caller) {
        try {
            NativeFunction f = SlotArgs.function(fn);
            if (f == null || calledByWrappedNative()) {
                return Interposer.NOT_JAVAS;
            }
            Object found = CallProtocol.findsByStream(f) ? calls.find(f, 0, stream) : calls.find(f, handle, 0);
            if (found == null) {
                return Interposer.NOT_JAVAS;
            }
            return calls.token(f, found);
        } catch (Throwable t) {
            Log.once("native-hot", "tracking failed in a native call, tracking goes on: " + t);
            return Interposer.NOT_JAVAS;
        }
    }

    void hotExit(int fn, long handle, long stream, int status, long token, long caller) {
        try {
            NativeFunction f = SlotArgs.function(fn);
            if (f == null) {
                return;
            }
            // found again: what it found at enter, unless it ended since (as a lookup at exit would see)
            Object found = CallProtocol.findsByStream(f) ? calls.find(f, 0, stream) : calls.find(f, handle, 0);
            calls.exit(f, found, handle, stream, status, token, BRIDGE,
                    CallProtocol.exitReadsHandles(f, found) ? access(caller) : null);
        } catch (Throwable t) {
            Log.once("native-hot", "tracking failed in a native call, tracking goes on: " + t);
        }
    }

    boolean seen(int fn, long handle, int device, int slot, long caller) {
        try {
            NativeFunction f = SlotArgs.function(fn);
            return f != null && !calledByWrappedNative() && tracker.seenByNative(f, handle, device, slot, BRIDGE, access(caller));
        } catch (Throwable t) {
            Log.once("native-seen", "tracking failed in a native call, tracking goes on: " + t);
            return false;
        }
    }

    /**
     * Whether the Java frame below this upcall is a native method a Java bridge wrapped (its name
     * carries the native method prefix): its C code reached NCCL through a helper of its own, whose
     * symbol the native library could not tell from the wrapped entry point's; or the agent's own
     * exit-time call through the renamed native (a release cleanup claimed must not park). Asked
     * only once a native method was wrapped.
     */
    private static boolean calledByWrappedNative() {
        if (!WrappedNatives.any()) {
            return false;
        }
        String prefix = WrappedNatives.prefix();
        // a wrapped native runs under the prefix; one of a class loaded before an attach keeps its
        // name (its call sites were rewritten), and its library's slots are patched: the same calls
        return WALKER.walk(frames -> frames.dropWhile(f -> f.getClassName().startsWith(OWN)).findFirst()
                .map(f -> prefix != null && f.getMethodName().startsWith(prefix)
                        || f.isNativeMethod() && WrappedNatives.has(f.getClassName(), f.getMethodName()))
                .orElse(false));
    }
}
