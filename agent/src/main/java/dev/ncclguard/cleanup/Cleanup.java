package dev.ncclguard.cleanup;

import dev.ncclguard.catalog.Kind;
import dev.ncclguard.track.HandleView;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Releases what the application left behind, at exit, within one deadline. {@link #releaseInOrder}
 * runs the phases, each a class of this package:
 * <ol>
 * <li>{@link Polling}: wait for pending events and unsynchronized streams by polling
 *     cudaEventQuery and cudaStreamQuery (a synchronize call could block past any deadline), then
 *     for the NCCL operations in flight on the leaked communicators;</li>
 * <li>{@link SerialReleases#destroyDeviceCommunicators}: destroy leaked device communicators with
 *     ncclDevCommDestroy while their communicator is alive;</li>
 * <li>{@link CommRelease}: destroy leaked communicators, aborting those whose destroy fails or does
 *     not return in time (those of one device and library together, inside
 *     ncclGroupStart/ncclGroupEnd);</li>
 * <li>{@link SerialReleases#destroyEvents}: destroy leaked events. Streams are left to the
 *     application once their work is done;</li>
 * <li>{@link SerialReleases#freeMemory}: free leaked ncclMemAlloc memory, once every leaked
 *     communicator (which may have it registered) is gone.</li>
 * </ol>
 * Every native call goes through {@link NativeCalls}: it runs on a daemon thread and the caller
 * only ever waits with a bound, so a library that hangs costs at most the timeout: what has not
 * answered by then is "timed-out".
 *
 * <p>Cleanup never releases what the application releases: it claims each event and communicator
 * before its first call on it ({@link dev.ncclguard.track.ReleaseClaim}, {@link LeakProgress#claim}),
 * and one the application is releasing, or released, is left alone ("none").
 */
public final class Cleanup {
    /** Waiting for GPU work may take at most this share of the timeout, so communicators get the rest. */
    static final double SYNC_SHARE = 0.5;
    /** The most device communicators may take, before their communicators. */
    static final double DEVCOMM_DESTROY_SHARE = 0.1;
    /** Kept back for destroying events, which is quick unless the library is wedged. */
    static final double EVENT_DESTROY_SHARE = 0.1;
    /** Kept back for freeing memory, after the events. */
    static final double MEMORY_FREE_SHARE = 0.1;
    /**
     * How long past the deadline a native call of cleanup may take to return before it counts as
     * one that does not: a call merely queued behind another returns in microseconds.
     */
    static final long HANG_GRACE_NANOS = TimeUnit.MILLISECONDS.toNanos(50);

    static final long FIRST_POLL_SLEEP_NANOS = TimeUnit.MICROSECONDS.toNanos(200);
    static final long MAX_POLL_SLEEP_NANOS = TimeUnit.MILLISECONDS.toNanos(10);
    /** Long enough that no exit waits on it, short of overflowing nanoTime arithmetic. */
    private static final long MAX_TIMEOUT_NANOS = TimeUnit.DAYS.toNanos(1);

    private final List<LeakProgress> items = new ArrayList<>();
    private final NativeCalls calls;
    private final InFlightWork inFlight;
    private final Deadline deadline;

    private Cleanup(List<HandleView> leaks, Duration timeout, CudaRuntime cudaRuntime, InFlightWork inFlight) {
        for (HandleView view : leaks) {
            items.add(new LeakProgress(view));
        }
        this.calls = new NativeCalls(cudaRuntime == null ? CudaRuntime.none() : cudaRuntime);
        this.inFlight = inFlight == null ? InFlightWork.NONE : inFlight;
        long timeoutNanos = Math.max(0, Math.min(timeout.toNanos(), MAX_TIMEOUT_NANOS));
        this.deadline = new Deadline(timeoutNanos, System.nanoTime() + timeoutNanos);
    }

    /** Cleans {@code leaks}, taking the CUDA runtime for cudaSetDevice from the leaks themselves. */
    public static Map<HandleView, LeakOutcome> run(List<HandleView> leaks, Duration timeout) {
        return run(leaks, timeout, CudaRuntime.from(leaks));
    }

    /**
     * Cleans {@code leaks} and returns each one's outcome, in the order given. Returns by
     * {@code timeout} (plus thread start-up) whatever the native libraries do; never throws.
     */
    public static Map<HandleView, LeakOutcome> run(List<HandleView> leaks, Duration timeout,
                                                     CudaRuntime cudaRuntime) {
        return execute(leaks, timeout, cudaRuntime).outcomes();
    }

    /** Like {@link #run}, and says whether a native call of cleanup was still running at the end. */
    public static CleanupRun execute(List<HandleView> leaks, Duration timeout, CudaRuntime cudaRuntime) {
        return execute(leaks, timeout, cudaRuntime, InFlightWork.NONE);
    }

    /** Like {@link #execute}, waiting first for the NCCL operations {@code inFlight} says are in flight. */
    public static CleanupRun execute(List<HandleView> leaks, Duration timeout, CudaRuntime cudaRuntime,
            InFlightWork inFlight) {
        Cleanup cleanup = new Cleanup(leaks, timeout, cudaRuntime, inFlight);
        try {
            cleanup.releaseInOrder();
        } catch (Throwable t) {
            cleanup.settleRest(LeakOutcome.of(Outcome.FAILED, "cleanup failed: " + t));
        }
        // a destroy that an abort released returns a moment later: give it until the deadline
        cleanup.calls.awaitReturns(cleanup.deadline.at() + HANG_GRACE_NANOS);
        return new CleanupRun(cleanup.results(), cleanup.calls.anyIn());
    }

    /** The phases, in the order they run, and how much of the timeout each may take. */
    private void releaseInOrder() {
        long pollStarted = System.nanoTime();
        List<LeakProgress> releasingEvents = new Polling(items, calls, inFlight)
                .run(pollStarted, deadline.share(pollStarted, SYNC_SHARE));
        SerialReleases serial = new SerialReleases(items, calls, deadline);
        serial.destroyDeviceCommunicators(); // within DEVCOMM_DESTROY_SHARE
        new CommRelease(items, calls).run(communicatorsEnd());
        serial.destroyEvents(releasingEvents); // until the deadline
        serial.freeMemory(); // until the deadline
    }

    /** The deadline, less what is kept back for the events and the memory that follow. */
    private long communicatorsEnd() {
        boolean events = false;
        boolean memory = false;
        for (LeakProgress item : items) {
            events |= item.view.kind() == Kind.EVENT;
            memory |= item.view.kind() == Kind.MEMORY;
        }
        return deadline.at() - (events ? (long) (deadline.timeoutNanos() * EVENT_DESTROY_SHARE) : 0)
                - (memory ? (long) (deadline.timeoutNanos() * MEMORY_FREE_SHARE) : 0);
    }

    private void settleRest(LeakOutcome result) {
        for (LeakProgress item : items) {
            item.settle(result.outcome(), result.note());
        }
    }

    private Map<HandleView, LeakOutcome> results() {
        Map<HandleView, LeakOutcome> results = new LinkedHashMap<>();
        for (LeakProgress item : items) {
            LeakOutcome result = item.result.get();
            results.put(item.view, result != null ? result
                    : LeakOutcome.of(Outcome.FAILED, "not reached before the deadline"));
        }
        return results;
    }

    /**
     * The one deadline of a cleanup.
     *
     * @param timeoutNanos the whole timeout
     * @param at           the nanoTime the cleanup must end by
     */
    record Deadline(long timeoutNanos, long at) {
        /** The earlier of the deadline and {@code share} of the timeout after {@code started}. */
        long share(long started, double share) {
            return Math.min(at, started + (long) (timeoutNanos * share));
        }
    }
}
