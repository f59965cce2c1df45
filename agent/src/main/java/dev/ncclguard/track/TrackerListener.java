package dev.ncclguard.track;

/**
 * Told by the {@link Tracker} when handles begin and end, after its own state has changed: the
 * live view (JMX counts, JFR events) hangs off this, so the tracker depends on neither. Called on
 * the application's thread, right after the native call returned: implementations must be quick,
 * must not block, and must not call back into native code. Exceptions are caught by the tracker.
 * Only creations and releases are reported, never the hot-path calls (records, queries, collectives).
 */
public interface TrackerListener {
    /** Listens to nothing; what a tracker has until one is set. */
    TrackerListener NONE = new TrackerListener() {
    };

    /**
     * A communicator was created (also each one of an ncclCommInitAll).
     *
     * @param rank     its rank, or -1 when unknown (split children)
     * @param nranks   its size, or -1 when unknown
     * @param commId   16 hex digits of its identity, or null when unknown
     */
    default void communicatorCreated(long handle, String api, String bridge, int rank, int nranks, int device,
            String commId) {
    }

    /** A communicator the tracker knew was destroyed or aborted ({@code api} says which). */
    default void communicatorReleased(long handle, String api, String bridge) {
    }

    default void eventCreated(long handle) {
    }

    /** An event the tracker knew was destroyed. */
    default void eventDestroyed(long handle) {
    }

    default void streamCreated(long handle) {
    }

    /** A stream the tracker knew was destroyed. */
    default void streamDestroyed(long handle) {
    }

    /** The first tracked call returned: the application has started to use NCCL or CUDA. Called once. */
    default void firstCall() {
    }
}
