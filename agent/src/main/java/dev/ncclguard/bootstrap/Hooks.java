package dev.ncclguard.bootstrap;

import dev.ncclguard.bootstrap.state.FfmSink;
import dev.ncclguard.bootstrap.state.HookState;
import dev.ncclguard.bootstrap.state.JnaSink;
import dev.ncclguard.bootstrap.state.NativeSink;
import java.util.concurrent.locks.LockSupport;

/**
 * The entry points that advice inlined into other classes calls. This class (and {@link JnaSink})
 * is defined in the bootstrap class loader so that it is visible from JNA in any class loader and
 * from java.lang; the agent proper plugs its implementation in once installed, in {@link HookState},
 * which no module but the agent's reads. Its methods expose nothing of the agent.
 */
public final class Hooks {
    private static final Object FFM_INSTALL_LOCK = new Object();

    /** The name JFR gives its shutdown hook thread (jdk.jfr.internal.PlatformRecorder). */
    public static final String JFR_SHUTDOWN_HOOK = "JFR Shutdown Hook";

    private Hooks() {
    }

    /*
     * The JNA entry points below are called from code woven into com.sun.jna.Function.invoke.
     * They never throw: a failure of the agent must not reach the application's JNA call.
     */

    /** On entry of every JNA call: the catalog entry of a tracked symbol, else null. Allocates nothing. */
    public static Object jnaLookup(String symbol) {
        try {
            JnaSink sink = HookState.jna;
            return sink == null || symbol == null ? null : sink.lookup(symbol);
        } catch (Throwable t) {
            return null;
        }
    }

    /** After {@link #jnaLookup}: what a tracked call acts on, for {@link #jnaEnter} and {@link #jnaExit}. */
    public static Object jnaFind(Object fn, Object[] args) {
        if (fn == null) {
            return null;
        }
        try {
            JnaSink sink = HookState.jna;
            return sink == null ? null : sink.find(fn, args);
        } catch (Throwable t) {
            return null;
        }
    }

    /**
     * After {@link #jnaFind}: the token for {@link #jnaExit}; 0 for untracked calls. Does not
     * return when the call would release a handle the agent's exit-time cleanup has claimed.
     */
    public static long jnaEnter(Object fn, Object found, Object[] args) {
        if (fn == null) {
            return 0L;
        }
        long token;
        try {
            JnaSink sink = HookState.jna;
            token = sink == null ? 0L : sink.enter(fn, found, args);
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
    public static Object jnaExit(Object result, Object fn, Object found, Object library, Object[] args, long token) {
        if (fn != null) {
            try {
                JnaSink sink = HookState.jna;
                if (sink != null) {
                    sink.exit(fn, found, library, args, result, token);
                }
            } catch (Throwable t) {
                // the bridge logs its own failures; nothing may reach the application
            }
        }
        return result;
    }

    /**
     * Woven into ApplicationShutdownHooks.add: the hook to register in place of {@code hook}. JFR's
     * is kept back (the agent runs it after its exit report, so that the report's JFR events reach
     * a recording JFR dumps at exit) and a thread that does nothing takes its place.
     */
    public static Thread shutdownHookToAdd(Thread hook) {
        try {
            if (HookState.deferJfrShutdown && hook != null && JFR_SHUTDOWN_HOOK.equals(hook.getName())
                    && HookState.jfrShutdownHook == null) {
                HookState.jfrShutdownHook = hook;
                return new Thread("ncclguard: JFR's exit dump runs after the exit report");
            }
        } catch (Throwable t) {
            // registering the hook as asked is always safe
        }
        return hook;
    }

    /**
     * Called by a generated native-method wrapper (or a rewritten call site) before the renamed
     * native, with the site's argument slots (see {@link NativeSink}). Never throws; does not
     * return when the call would release a handle the agent's exit-time cleanup has claimed.
     */
    public static long nativeEnter(int site, long w0, Object r0, long w1, Object r1, long w2, Object r2,
            long w3, Object r3, long w4, Object r4) {
        NativeSink sink = HookState.natives;
        if (sink == null) {
            return 0L;
        }
        long token;
        try {
            token = sink.enter(site, w0, r0, w1, r1, w2, r2, w3, r3, w4, r4);
        } catch (Throwable t) {
            return 0L;
        }
        if (token == NativeSink.PARK) {
            parkUntilHalt();
        }
        return token;
    }

    /** Called by a generated native-method wrapper after the renamed native returned. Never throws. */
    public static void nativeExit(int site, long w0, Object r0, long w1, Object r1, long w2, Object r2,
            long w3, Object r3, long w4, Object r4, long result, Object receiver, long token) {
        NativeSink sink = HookState.natives;
        if (sink != null) {
            try {
                sink.exit(site, w0, r0, w1, r1, w2, r2, w3, r3, w4, r4, result, receiver, token);
            } catch (Throwable t) {
                // the application's call has returned; tracking must never change its outcome
            }
        }
    }

    /**
     * Called by a generated wrapper of a call tracked on its handles alone, before the renamed
     * native, with the handle's and the stream's slots: the record the call acts on, which the
     * wrapper keeps in a local for {@link #nativeToken} and {@link #nativeExitFound}. Never throws.
     */
    public static Object nativeFind(int site, long handle, Object handleRef, long stream, Object streamRef) {
        NativeSink sink = HookState.natives;
        if (sink == null) {
            return null;
        }
        try {
            return sink.find(site, handle, handleRef, stream, streamRef);
        } catch (Throwable t) {
            return null;
        }
    }

    /** After {@link #nativeFind}, before the renamed native: the token for {@link #nativeExitFound}. Never throws. */
    public static long nativeToken(int site, Object found) {
        NativeSink sink = HookState.natives;
        if (sink == null) {
            return 0L;
        }
        try {
            return sink.token(site, found);
        } catch (Throwable t) {
            return 0L;
        }
    }

    /** After the renamed native of a {@link #nativeFind} call returned. Never throws. */
    public static void nativeExitFound(int site, Object found, long handle, Object handleRef, long stream,
            Object streamRef, long result, Object receiver, long token) {
        NativeSink sink = HookState.natives;
        if (sink != null) {
            try {
                sink.exit(site, found, handle, handleRef, stream, streamRef, result, receiver, token);
            } catch (Throwable t) {
                // the application's call has returned; tracking must never change its outcome
            }
        }
    }

    /**
     * Called by code woven at the entry of SymbolLookup's and Linker's static methods. The first
     * call installs the FFM bridge before any lookup runs; calls meanwhile on other threads wait
     * for it. Never throws.
     */
    public static void ffmFirstUse() {
        if (HookState.ffmInstall == null) {
            return;
        }
        synchronized (FFM_INSTALL_LOCK) {
            Runnable install = HookState.ffmInstall;
            HookState.ffmInstall = null; // before it runs: the installing thread's own FFM calls pass straight on
            if (install != null) {
                try {
                    install.run();
                } catch (Throwable t) {
                    // the installer logs its own failures; the application's call goes on untracked
                }
            }
        }
    }

    /** Called by code woven into the JDK's native library lookups (name found at address). Never throws. */
    public static long ffmSymbol(long address, String name) {
        FfmSink sink = HookState.ffm;
        if (sink != null && address != 0L) {
            try {
                sink.symbol(name, address);
            } catch (Throwable t) {
                // a lookup must never fail because of the agent
            }
        }
        return address;
    }

    /** Called by code woven into Linker.downcallHandle: the handle to give the application. Never throws. */
    public static Object ffmDowncall(Object handle, Object symbol) {
        FfmSink sink = HookState.ffm;
        if (sink == null || handle == null) {
            return handle;
        }
        try {
            Object wrapped = sink.downcall(handle, symbol);
            return wrapped != null ? wrapped : handle;
        } catch (Throwable t) {
            return handle;
        }
    }

    public static void exiting(int status) {
        if (HookState.exitStatus == -1) {
            HookState.exitStatus = status;
        }
    }

    public static void uncaught(Thread thread) {
        if (thread != null && thread == HookState.mainThread) {
            HookState.mainThreadFailed = true;
        }
    }
}
