package dev.ncclguard.bridge;

import dev.ncclguard.bootstrap.Hooks;
import dev.ncclguard.bootstrap.state.JnaSink;
import dev.ncclguard.bootstrap.state.NativeSink;
import dev.ncclguard.catalog.NativeFunction;
import dev.ncclguard.log.Log;
import dev.ncclguard.track.CallArgs;
import dev.ncclguard.track.NativeAccess;
import dev.ncclguard.track.Tracker;

/**
 * How every bridge tells the tracker of a native call, written once. A bridge sees a call of a
 * catalog function and reports it in one of two shapes:
 * <ul>
 * <li>on its decoded arguments: {@link #enter(NativeFunction, CallArgs)} before the native call,
 *     {@link #exit(NativeFunction, CallArgs, int, long, String, NativeAccess)} after it;</li>
 * <li>a call of the hot path ({@link #onHandles}: records, queries, synchronizes, collectives),
 *     on its handle and stream passed by value alone: {@link #find} before the call (the record it
 *     acts on, looked up once), {@link #token}, and {@link #exit(NativeFunction, Object, long,
 *     long, int, long, String, NativeAccess)} after it. The bridge carries what find and token
 *     returned to the exit in locals of its own, so a call needs no per-thread state.</li>
 * </ul>
 * A token of {@link #PARK} means the call would release a handle that the exit-time cleanup has
 * claimed: the bridge must not let it reach the library but park the thread ({@link #parkIfClaimed};
 * the bootstrap hooks do it for the JNA and native-method bridges). The agent's own calls are not
 * tracked ({@link OwnCalls}), for a bridge that can see them. Nothing here throws: a failure of the
 * tracker is logged once per bridge and step, and the application's call goes on untracked.
 */
public final class CallProtocol {
    /**
     * The token of a release of a handle that cleanup claimed: the tracker's, and the value the
     * bootstrap hooks park on ({@link JnaSink#PARK}, {@link NativeSink#PARK}), so a bridge hands
     * the token on as it is.
     */
    public static final long PARK = Tracker.CLAIMED_BY_CLEANUP;
    /** The handle a bridge passes to the hot exit when {@link #exitReadsHandles} said it need not decode it. */
    public static final long NOT_READ = Tracker.NOT_READ;

    private final Tracker tracker;
    /** The bridge's name in the log, once per step: "jna", "native", "ffm". */
    private final String enterFailed;
    private final String exitFailed;
    private final String findFailed;
    private final String name;
    /** Whether the bridge can see the agent's own calls (JNA: they go through the application's JNA). */
    private final boolean seesOwnCalls;

    /**
     * @param name         the bridge's, for the log: "jna", "native", "ffm"
     * @param seesOwnCalls whether the agent's own exit-time calls can reach this bridge; those
     *                     that cannot skip the check on every call
     */
    public CallProtocol(Tracker tracker, String name, boolean seesOwnCalls) {
        this.tracker = tracker;
        this.name = name;
        this.seesOwnCalls = seesOwnCalls;
        this.enterFailed = name + "-enter";
        this.exitFailed = name + "-exit";
        this.findFailed = name + "-find";
    }

    /** Whether {@code fn} is followed on its handle and stream alone (the hot path's shape). */
    public static boolean onHandles(NativeFunction fn) {
        return fn.change().onHandles();
    }

    /** Whether {@link #find} takes the stream argument of {@code fn} (else its handle argument). */
    public static boolean findsByStream(NativeFunction fn) {
        return fn.change().findsByStream();
    }

    /** Whether the hot exit after {@code found} reads the handles; else the bridge passes {@link #NOT_READ} and no access. */
    public static boolean exitReadsHandles(NativeFunction fn, Object found) {
        return Tracker.exitReadsHandles(fn, found);
    }

    /** Parks the calling thread for good when {@code token} is {@link #PARK}, for a bridge that is not behind the hooks. */
    public static void parkIfClaimed(long token) {
        if (token == PARK) {
            Hooks.parkUntilHalt(); // a release of what the exit-time cleanup releases: never twice
        }
    }

    // --- on the decoded arguments ---

    /** Before the native call: the token for the exit, {@link #PARK}, or 0 for nothing to follow. */
    public long enter(NativeFunction fn, CallArgs args) {
        if (seesOwnCalls && OwnCalls.onThisThread()) {
            return 0L;
        }
        try {
            return tracker.enter(fn, args);
        } catch (Throwable t) {
            failed(enterFailed, fn, t);
            return 0L;
        }
    }

    /** After the native call returned {@code status} (not when it threw). */
    public void exit(NativeFunction fn, CallArgs args, int status, long token, String bridge, NativeAccess access) {
        exit(fn, args, status, token, bridge, access, null);
    }

    /**
     * After the native call returned {@code status}; {@code known}, when not null, is the creating
     * stack the caller already has for this very call's frames (the native depot's id learned
     * before), taken in place of a walk.
     */
    public void exit(NativeFunction fn, CallArgs args, int status, long token, String bridge, NativeAccess access,
            Throwable known) {
        if (seesOwnCalls && OwnCalls.onThisThread()) {
            return;
        }
        try {
            // captured in this frame, not the tracker's: four frames fewer for the VM to walk
            Throwable stack = status == 0 && fn != null && tracker.capturesStack(fn)
                    ? known != null ? known : new Throwable("creation stack") : null;
            tracker.exit(fn, args, status, token, bridge, access, stack);
        } catch (Throwable t) {
            failed(exitFailed, fn, t);
        }
    }

    // --- on the handle and stream alone ---

    /**
     * Before the native call: the record the call acts on, or null.
     *
     * @param handle the handle argument, decoded; 0 where {@link #findsByStream} (the bridge need not decode it)
     * @param stream the stream argument, decoded; 0 where not {@link #findsByStream}
     */
    public Object find(NativeFunction fn, long handle, long stream) {
        try {
            return tracker.find(fn, handle, stream);
        } catch (Throwable t) {
            failed(findFailed, fn, t);
            return null;
        }
    }

    /** After {@link #find}, before the native call: the token for the exit. */
    public long token(NativeFunction fn, Object found) {
        try {
            return tracker.token(fn, found);
        } catch (Throwable t) {
            failed(enterFailed, fn, t);
            return 0L;
        }
    }

    /**
     * After the native call returned {@code status}, with what {@link #find} and {@link #token}
     * returned; {@code handle} and {@code stream} as decoded, or {@link #NOT_READ}.
     */
    public void exit(NativeFunction fn, Object found, long handle, long stream, int status, long token, String bridge,
            NativeAccess access) {
        if (seesOwnCalls && OwnCalls.onThisThread()) {
            return;
        }
        try {
            tracker.exit(fn, found, handle, stream, status, token, bridge, access);
        } catch (Throwable t) {
            failed(exitFailed, fn, t);
        }
    }

    private void failed(String step, NativeFunction fn, Throwable t) {
        Log.once(step, "tracking failed in " + (fn == null ? "a call" : fn.symbol()) + " (" + name
                + " bridge), tracking goes on: " + t);
    }
}
