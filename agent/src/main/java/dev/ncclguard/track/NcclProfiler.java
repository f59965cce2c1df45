package dev.ncclguard.track;

import java.util.List;
import java.util.Map;

/**
 * What NCCL's profiler plugin (the agent's native library, loaded by NCCL) knows of communicators,
 * as the tracker asks it: the plugin's record of a communicator a bridge saw created, claimed so
 * that the communicator is one record; NCCL's commId where no bridge can compute it; the work in
 * flight on it; and the communicators only NCCL saw (NCCL linked into a native library), which no
 * bridge claimed. Set by the profiler bridge ({@link Tracker#ncclProfiler}); every method is
 * called at a creation or a snapshot, never on a hot call, and never throws.
 */
public interface NcclProfiler {
    /**
     * Claims the plugin's record of a communicator just created on this thread and returns its
     * id, 0 when there is none.
     *
     * @param commId NCCL's commId as the tracker computed it, if {@code hasCommId}
     * @param inits  the records the bridge knows were inited during the call
     *               ({@link CallArgs#profilerInits}), or -1: the plugin looks them up
     */
    long claim(boolean hasCommId, long commId, int rank, int nranks, long inits);

    /**
     * A bridge's creation starts on this thread, before the native call: until
     * {@link #creationEnded}, the records NCCL inits meanwhile on this thread (or on threads of
     * NCCL's own) may be the ones its {@link #claim} takes, so no snapshot reports them as
     * communicators of the plugin's alone. Called by the tracker on every creation's enter.
     */
    default void creationStarted() {
    }

    /** The creation that {@link #creationStarted} on this thread ended: claimed, or failed. */
    default void creationEnded() {
    }

    /**
     * Claims, at a snapshot, the record of a communicator whose creation found none: a nonblocking
     * init's plugin init runs on a thread of NCCL's after the call returned. By commId and rank only.
     */
    long claimLate(long commId, int rank, int nranks);

    /** NCCL's commId of a record, as its plugin was told. */
    long commId(long record);

    /**
     * NCCL's commId of the newest clique of {@code nranks} ranks inited during the call and not
     * claimed yet (ncclCommInitAll, whose unique id NCCL makes inside the call), or 0 with
     * {@code found[0] = false}.
     */
    long cliqueCommId(int nranks, long inits, boolean[] found);

    /** How many operations are in flight on the communicator of {@code record} now. */
    long inFlight(long record);

    /**
     * The report's {@code inFlight} details of a record, in report order (operations, the oldest's
     * function, elements, datatype, bytes, age), or null when nothing is in flight.
     */
    Map<String, Object> inFlightDetails(long record);

    /** The communicators NCCL inited, no bridge claimed and NCCL never finalized: leaks only NCCL saw. */
    List<HandleView> unclaimed();

    /** The same as communicator lives, for the report's communicators list. */
    List<CommLife> unclaimedLives();

    /** Communicators only the plugin saw: [inited, finalized] since the agent started. */
    long[] unclaimedCounts();
}
