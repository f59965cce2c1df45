package dev.ncclguard.bridge;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * The agent's own calls into the libraries (the exit-time probe and cleanup), which a bridge may
 * see like the application's: the JNA bridge sees those made through the application's JNA. The
 * call protocol ignores them for a bridge that can see them. They are rare, so the application's
 * calls read one shared counter and skip the thread-local while it is 0.
 */
public final class OwnCalls {
    /** The agent's own calls in progress, on any thread. */
    private static final AtomicInteger IN_PROGRESS = new AtomicInteger();
    /** A subclass, not withInitial(Flag::new): a method reference spins classes at a program's first call. */
    private static final ThreadLocal<Flag> PER_THREAD = new ThreadLocal<>() {
        @Override
        protected Flag initialValue() {
            return new Flag();
        }
    };

    private OwnCalls() {
    }

    /** Whether this thread is inside one of the agent's own calls. */
    public static boolean onThisThread() {
        return IN_PROGRESS.get() != 0 && PER_THREAD.get().set;
    }

    /** Marks the start of an agent's own call on this thread; returns whether it is the outermost. */
    public static boolean starts() {
        Flag thread = PER_THREAD.get();
        if (thread.set) {
            return false;
        }
        IN_PROGRESS.incrementAndGet();
        thread.set = true;
        return true;
    }

    /** Ends what {@link #starts} started, when that returned true. */
    public static void ends() {
        PER_THREAD.get().set = false;
        IN_PROGRESS.decrementAndGet();
    }

    private static final class Flag {
        boolean set;
    }
}
