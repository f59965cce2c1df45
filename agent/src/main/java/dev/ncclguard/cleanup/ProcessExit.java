package dev.ncclguard.cleanup;

import dev.ncclguard.bridge.interposer.NativePart;
import dev.ncclguard.catalog.ExitCalls;
import dev.ncclguard.log.Log;
import dev.ncclguard.track.HandleView;
import dev.ncclguard.track.NativeAccess;
import java.util.List;

/**
 * Ends the process when a thread was left inside NCCL or CUDA at exit. After the JVM's shutdown
 * hooks, exit(3) runs the C libraries' exit handlers and destructors (CUDA's context teardown
 * among them, the emulator's NCCLEMU_REPORT), and those can wait for good on a call that never
 * returns; even Runtime.halt goes through exit(3). So, once the reports are written, a native
 * watchdog thread is armed and the JVM halts through exit(3): the handlers get
 * {@link #EXIT_HANDLERS_MILLIS}, then the watchdog's _exit(2) ends the process with the status it
 * was exiting with. Without the native part, libc's _exit right away; only then, never otherwise.
 */
public final class ProcessExit {
    /** How long the C libraries' exit handlers get before the watchdog's _exit. */
    public static final long EXIT_HANDLERS_MILLIS = 2_000;

    private ProcessExit() {
    }

    /**
     * Does not return. With the agent's {@code nativePart} (null without one) and its watchdog
     * armed, Runtime.halt(status), through exit(3) and its handlers; else {@link #immediately}.
     */
    public static void afterExitHandlers(int status, List<HandleView> leaks, NativePart nativePart) {
        if (nativePart != null && nativePart.armExitWatchdog(EXIT_HANDLERS_MILLIS, status)) {
            Log.exitWarning("a call into NCCL or CUDA never returned; ending the process with _exit(" + status
                    + ") if the libraries' exit handlers have not ended it within " + EXIT_HANDLERS_MILLIS + " ms");
            System.out.flush();
            System.err.flush();
            Runtime.getRuntime().halt(status);
        }
        immediately(status, leaks);
    }

    /** Does not return. {@code _exit} is looked up through a loaded NCCL or CUDA library (dlsym
     * searches its dependencies, libc among them), through the application's own JNA. */
    public static void immediately(int status, List<HandleView> leaks) {
        Log.exitWarning("a call into NCCL or CUDA never returned; ending the process with _exit(" + status
                + ") so that the libraries' exit handlers cannot hang it");
        System.out.flush();
        System.err.flush();
        for (HandleView view : leaks) {
            NativeAccess access = view.access();
            if (access == null) {
                continue;
            }
            try {
                access.call(ExitCalls.LIBC_EXIT, status);
            } catch (Throwable t) {
                // this library cannot reach it: try the next one
            }
        }
        Runtime.getRuntime().halt(status); // no library to call through: the best that is left
    }
}
