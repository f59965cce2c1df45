package sample;

import com.sun.jna.Pointer;

/** A communicator kept for the whole test JVM on purpose: known-leaks.supp names it. */
final class Warmup {
    private static Pointer kept;

    private Warmup() {
    }

    static synchronized void communicator() {
        if (kept == null) {
            kept = Nccl.communicator();
        }
    }
}
