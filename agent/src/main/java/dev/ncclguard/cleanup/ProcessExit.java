package dev.ncclguard.cleanup;

import dev.ncclguard.catalog.ExitCalls;
import dev.ncclguard.log.Log;
import dev.ncclguard.track.HandleView;
import dev.ncclguard.track.NativeAccess;
import java.util.List;

/**
 * Ends the process when a thread was left inside NCCL or CUDA at exit. After the JVM's shutdown
 * hooks, exit(3) runs the C libraries' exit handlers and destructors (CUDA's context teardown
 * among them), and those can wait for good on a call that never returns; even Runtime.halt goes
 * through exit(3). So, once the reports are written, libc's _exit(2) ends the process with the
 * status it was exiting with, skipping those handlers; only then, never otherwise.
 */
public final class ProcessExit {
    private ProcessExit() {
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
