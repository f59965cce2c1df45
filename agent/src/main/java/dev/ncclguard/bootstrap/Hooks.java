package dev.ncclguard.bootstrap;

import java.util.concurrent.locks.LockSupport;

/**
 * The entry points that advice inlined into other classes calls. This class (and {@link JnaSink})
 * sits on the bootstrap class path so that it is visible from JNA in any class loader and from
 * java.lang; the agent proper plugs its implementation in once installed.
 */
public final class Hooks {
    /** The JNA bridge; null until the agent is installed, and while it is off. */
    public static volatile JnaSink jna;

    /** The status the JVM was asked to exit with (System.exit, signals); -1 while none. */
    public static volatile int exitStatus = -1;

    /** Whether the launcher's main thread died of an uncaught exception (the JVM then exits 1). */
    public static volatile boolean mainThreadFailed;

    /** The launcher's main thread, captured in premain. */
    public static volatile Thread mainThread;

    private Hooks() {
    }

    /*
     * The JNA entry points below are called from code woven into com.sun.jna.Function.invoke.
     * They never throw: a failure of the agent must not reach the application's JNA call.
     */

    /** On entry of every JNA call: the catalog entry of a tracked symbol, else null. Allocates nothing. */
    public static Object jnaLookup(String symbol) {
        try {
            JnaSink sink = jna;
            return sink == null || symbol == null ? null : sink.lookup(symbol);
        } catch (Throwable t) {
            return null;
        }
    }

    /**
     * After {@link #jnaLookup}: the token for {@link #jnaExit}; 0 for untracked calls. Does not
     * return when the call would release a handle the agent's exit-time cleanup has claimed.
     */
    public static long jnaEnter(Object fn, Object[] args) {
        if (fn == null) {
            return 0L;
        }
        long token;
        try {
            JnaSink sink = jna;
            token = sink == null ? 0L : sink.enter(fn, args);
        } catch (Throwable t) {
            return 0L;
        }
        if (token == JnaSink.PARK) {
            parkUntilHalt();
        }
        return token;
    }

    /**
     * Parks the calling thread for good. Used only for an application release that meets the
     * agent's cleanup of the same handle, which runs after every application shutdown hook: the
     * JVM is halting, so the thread is never missed, and the handle is released exactly once.
     */
    public static void parkUntilHalt() {
        while (true) {
            LockSupport.park(Hooks.class); // wakeups and interrupts change nothing
        }
    }

    /** Before the call returns {@code result} (not when it throws); returns {@code result} unchanged. */
    public static Object jnaExit(Object result, Object fn, Object library, Object[] args, long token) {
        if (fn != null) {
            try {
                JnaSink sink = jna;
                if (sink != null) {
                    sink.exit(fn, library, args, result, token);
                }
            } catch (Throwable t) {
                // the bridge logs its own failures; nothing may reach the application
            }
        }
        return result;
    }

    public static void exiting(int status) {
        if (exitStatus == -1) {
            exitStatus = status;
        }
    }

    public static void uncaught(Thread thread) {
        if (thread != null && thread == mainThread) {
            mainThreadFailed = true;
        }
    }
}
