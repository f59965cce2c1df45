package dev.ncclguard.cleanup;

import dev.ncclguard.catalog.ExitCalls;
import dev.ncclguard.catalog.Kind;
import dev.ncclguard.track.HandleView;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

/**
 * One leak's progress through cleanup. Worker threads may still write after the caller has given
 * up on them, so the first settled result wins and the polling state is changed under the lock.
 */
final class LeakProgress {
    static final String RELEASED_BY_APPLICATION = "released by the application while the JVM exited";

    enum Sync { PENDING, COMPLETE, FAILED, TIMED_OUT, HUNG }

    final HandleView view;
    final AtomicReference<LeakOutcome> result = new AtomicReference<>();
    private Sync sync = Sync.PENDING;
    private boolean asked;
    private String syncNote;
    volatile String abortReason;
    /** Its claim failed while the application's own release of it was in progress. */
    boolean applicationReleasing;
    volatile boolean abortStarted;
    volatile Integer abortStatus;
    volatile Integer groupEndStatus;
    volatile Integer destroyStatus;
    /** What waiting for its operations in flight came to, for a communicator; null if none were. */
    volatile String inFlightNote;
    volatile String callFailure;

    LeakProgress(HandleView view) {
        this.view = view;
    }

    /**
     * What the application released itself is not ours: claims the rest. One whose release the
     * application entered and that has not returned yet is left unsettled and marked: whether it
     * was released is known only when that release returns (or the deadline passes).
     */
    boolean claim() {
        if (view.claim().claimForCleanup()) {
            return true;
        }
        if (view.claim().applicationReleasing()) {
            applicationReleasing = true;
        } else {
            settle(Outcome.NONE, RELEASED_BY_APPLICATION);
        }
        return false;
    }

    /** Waits until {@code until} for the application's releases in {@code items} to return. */
    static void awaitApplicationReleases(List<LeakProgress> items, long until) {
        long sleep = Cleanup.FIRST_POLL_SLEEP_NANOS;
        while (true) {
            boolean releasing = false;
            for (LeakProgress item : items) {
                releasing |= item.view.claim().applicationReleasing();
            }
            if (!releasing || until - System.nanoTime() <= 0) {
                return;
            }
            LockSupport.parkNanos(sleep);
            sleep = Math.min(sleep * 2, Cleanup.MAX_POLL_SLEEP_NANOS);
        }
    }

    String querySymbol() {
        return view.kind() == Kind.EVENT ? ExitCalls.EVENT_QUERY : ExitCalls.STREAM_QUERY;
    }

    synchronized Sync sync() {
        return sync;
    }

    synchronized String syncNote() {
        return syncNote;
    }

    /** The library answered "not ready" for it at least once. */
    synchronized void asked() {
        asked = true;
    }

    synchronized void syncEnded(Sync state, String note) {
        if (sync == Sync.PENDING) {
            sync = state;
            syncNote = note;
        }
    }

    /** At the end of polling: still pending, or stuck inside a query that never returned. */
    synchronized void freezeSync(boolean inCall, long waitedMillis, String stillPending, String notQueried) {
        if (sync != Sync.PENDING) {
            return;
        }
        if (inCall) {
            sync = Sync.HUNG;
            syncNote = querySymbol() + " did not return within " + waitedMillis + " ms";
        } else if (asked) {
            sync = Sync.TIMED_OUT;
            syncNote = stillPending;
        } else {
            // never answered "not ready": the deadline came before its turn, nothing says it is pending
            sync = Sync.TIMED_OUT;
            syncNote = notQueried;
        }
    }

    void settle(Outcome outcome, String note) {
        result.compareAndSet(null, LeakOutcome.of(outcome, note));
    }

    boolean settled() {
        return result.get() != null;
    }
}
