package dev.ncclguard.cleanup;

import dev.ncclguard.catalog.ExitCalls;
import dev.ncclguard.catalog.Kind;
import dev.ncclguard.catalog.Status;
import dev.ncclguard.track.HandleView;
import dev.ncclguard.track.NativeAccess;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

/**
 * Releases what the application left behind, at exit, within one deadline, in this order:
 * <ol>
 * <li>wait for pending events and unsynchronized streams by polling cudaEventQuery and
 *     cudaStreamQuery (a synchronize call could block past any deadline);</li>
 * <li>destroy leaked communicators, aborting those whose destroy fails or does not return in
 *     time (those of one device and library together, inside ncclGroupStart/ncclGroupEnd);</li>
 * <li>destroy leaked events. Streams are left to the application once their work is done.</li>
 * <li>free leaked ncclMemAlloc memory, once every leaked communicator (which may have it
 *     registered) is gone.</li>
 * </ol>
 * Leaked device communicators are destroyed with ncclDevCommDestroy just before step 2, while
 * their communicator is alive (the struct it reads is a copy of the one NCCL filled in).
 * Every native call runs on a daemon thread and the caller only ever waits with a bound, so a
 * library that hangs costs at most the timeout: what has not answered by then is "timed-out".
 *
 * <p>Cleanup never releases what the application releases: it claims each event and communicator
 * before its first call on it ({@link dev.ncclguard.track.ReleaseClaim}), and one the application
 * is releasing, or released, is left alone ("none").
 */
public final class Cleanup {
    /** Waiting for GPU work may take at most this share of the timeout, so communicators get the rest. */
    static final double SYNC_SHARE = 0.5;
    /** Kept back for destroying events, which is quick unless the library is wedged. */
    static final double EVENT_DESTROY_SHARE = 0.1;
    /** The most device communicators may take, before their communicators. */
    static final double DEVCOMM_DESTROY_SHARE = 0.1;
    /** Kept back for freeing memory, after the events. */
    static final double MEMORY_FREE_SHARE = 0.1;

    private static final long FIRST_POLL_SLEEP_NANOS = TimeUnit.MICROSECONDS.toNanos(200);
    private static final long MAX_POLL_SLEEP_NANOS = TimeUnit.MILLISECONDS.toNanos(10);
    /**
     * How long past the deadline a native call of cleanup may take to return before it counts as
     * one that does not: a call merely queued behind another returns in microseconds.
     */
    static final long HANG_GRACE_NANOS = TimeUnit.MILLISECONDS.toNanos(50);
    /** Long enough that no exit waits on it, short of overflowing nanoTime arithmetic. */
    private static final long MAX_TIMEOUT_NANOS = TimeUnit.DAYS.toNanos(1);

    private final List<Item> items = new ArrayList<>();
    /** Native calls of cleanup in progress: one still in at the end was left hanging. */
    private final java.util.concurrent.atomic.AtomicInteger inNative = new java.util.concurrent.atomic.AtomicInteger();
    private final CudaRuntime cudaRuntime;
    private final InFlightWork inFlight;
    private final long timeoutNanos;
    private final long deadline;

    private Cleanup(List<HandleView> leaks, Duration timeout, CudaRuntime cudaRuntime, InFlightWork inFlight) {
        for (HandleView view : leaks) {
            items.add(new Item(view));
        }
        this.cudaRuntime = cudaRuntime == null ? CudaRuntime.none() : cudaRuntime;
        this.inFlight = inFlight == null ? InFlightWork.NONE : inFlight;
        this.timeoutNanos = Math.max(0, Math.min(timeout.toNanos(), MAX_TIMEOUT_NANOS));
        this.deadline = System.nanoTime() + timeoutNanos;
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
            cleanup.synchronizeEventsAndStreams();
            cleanup.destroyDeviceCommunicators();
            cleanup.releaseCommunicators();
            cleanup.destroyEvents();
            cleanup.freeMemory();
        } catch (Throwable t) {
            cleanup.settleRest(LeakOutcome.of(Outcome.FAILED, "cleanup failed: " + t));
        }
        // a destroy that an abort released returns a moment later: give it until the deadline
        long until = cleanup.deadline + HANG_GRACE_NANOS;
        while (cleanup.inNative.get() > 0 && until - System.nanoTime() > 0) {
            LockSupport.parkNanos(FIRST_POLL_SLEEP_NANOS);
        }
        return new CleanupRun(cleanup.results(), cleanup.inNative.get() > 0);
    }

    /**
     * What the application released itself is not ours: claims the rest. One whose release the
     * application entered and that has not returned yet is left unsettled and marked: whether it
     * was released is known only when that release returns (or the deadline passes).
     */
    private static boolean claim(Item item) {
        if (item.view.claim().claimForCleanup()) {
            return true;
        }
        if (item.view.claim().applicationReleasing()) {
            item.applicationReleasing = true;
        } else {
            item.settle(Outcome.NONE, RELEASED_BY_APPLICATION);
        }
        return false;
    }

    static final String RELEASED_BY_APPLICATION = "released by the application while the JVM exited";

    /** Waits until {@code until} for the application's releases in {@code items} to return. */
    private static void awaitApplicationReleases(List<Item> items, long until) {
        long sleep = FIRST_POLL_SLEEP_NANOS;
        while (true) {
            boolean releasing = false;
            for (Item item : items) {
                releasing |= item.view.claim().applicationReleasing();
            }
            if (!releasing || until - System.nanoTime() <= 0) {
                return;
            }
            LockSupport.parkNanos(sleep);
            sleep = Math.min(sleep * 2, MAX_POLL_SLEEP_NANOS);
        }
    }

    // ---- phase 1: poll events and streams ----

    /** Events whose cudaEventDestroy the application had entered and not returned from. */
    private final List<Item> releasingEvents = new ArrayList<>();

    private void synchronizeEventsAndStreams() {
        long started = System.nanoTime();
        long until = Math.min(deadline, started + (long) (timeoutNanos * SYNC_SHARE));
        pollEventsAndStreams(started, until);
        waitForWorkInFlight(until);
    }

    /**
     * Waits, until {@code until}, for the operations NCCL's profiler plugin says are in flight on
     * the leaked communicators, so that the destroy does not pull a communicator from under them.
     * A question to the agent's own library: it answers at once, so no thread of its own.
     */
    private void waitForWorkInFlight(long until) {
        List<Item> busy = new ArrayList<>();
        List<Long> counts = new ArrayList<>();
        for (Item item : items) {
            if (item.view.kind() == Kind.COMM) {
                long n = inFlight.count(item.view);
                if (n > 0) {
                    busy.add(item);
                    counts.add(n);
                }
            }
        }
        if (busy.isEmpty()) {
            return;
        }
        long started = System.nanoTime();
        long sleep = FIRST_POLL_SLEEP_NANOS;
        boolean left = true;
        while (left && until - System.nanoTime() > 0) {
            left = false;
            for (Item comm : busy) {
                left |= inFlight.count(comm.view) > 0;
            }
            if (left) {
                LockSupport.parkNanos(Math.min(sleep, Math.max(1, until - System.nanoTime())));
                sleep = Math.min(sleep * 2, MAX_POLL_SLEEP_NANOS);
            }
        }
        long waited = millisSince(started);
        for (int i = 0; i < busy.size(); i++) {
            Item comm = busy.get(i);
            long now = inFlight.count(comm.view);
            comm.inFlightNote = now == 0
                    ? "waited " + waited + " ms for its " + counts.get(i) + " operation(s) in flight, then destroyed it"
                    : now + " operation(s) still in flight after " + waited + " ms of waiting";
        }
    }

    private void pollEventsAndStreams(long started, long until) {
        List<Item> probes = new ArrayList<>();
        for (Item item : items) {
            if (item.view.kind() != Kind.EVENT && item.view.kind() != Kind.STREAM) {
                continue;
            }
            if (item.view.access() == null) {
                item.settle(Outcome.FAILED, "no library instance was recorded to query it");
            } else if (item.view.kind() == Kind.EVENT && !claim(item)) {
                if (item.applicationReleasing) {
                    releasingEvents.add(item);
                }
            } else {
                // an event is claimed before it is queried: it is destroyed at the end
                probes.add(item);
            }
        }
        if (probes.isEmpty()) {
            return;
        }
        AtomicBoolean stop = new AtomicBoolean();
        AtomicReference<Item> inCall = new AtomicReference<>();
        Future<Void> poller = callAsync("ncclguard-cleanup-sync", () -> {
            poll(probes, stop, inCall);
            return null;
        });
        await(poller, until);
        stop.set(true);
        long waitedMillis = millisSince(started);
        // the poller stops before its next call: one it is inside now returns in microseconds
        // unless it hangs, so only one still in after the grace did not return
        await(poller, System.nanoTime() + HANG_GRACE_NANOS);
        // the notes are the same for every probe: made once, not 200,000 times in cold code
        String stillPending = "still pending after " + waitedMillis + " ms";
        String notQueried = "not queried before the deadline (" + waitedMillis + " ms)";
        for (Item probe : probes) {
            probe.freezeSync(probe == inCall.get(), waitedMillis, stillPending, notQueried);
        }
        for (Item probe : probes) {
            if (probe.view.kind() == Kind.STREAM) {
                settleStream(probe);
            }
        }
    }

    private void poll(List<Item> probes, AtomicBoolean stop, AtomicReference<Item> inCall) {
        long sleep = FIRST_POLL_SLEEP_NANOS;
        while (!stop.get()) {
            boolean pending = false;
            StreamAnswers streams = new StreamAnswers(); // a stream's answer holds for one pass
            for (Item probe : probes) {
                if (stop.get()) {
                    return;
                }
                if (probe.sync() != Sync.PENDING) {
                    continue;
                }
                if (probe.view.kind() == Kind.EVENT && probe.view.recordedOn() != 0) {
                    inCall.set(probe);
                    try {
                        if (streams.idle(probe.view.access(), probe.view.recordedOn())) {
                            // its stream got past its last record: complete, without 200,000 queries
                            probe.syncEnded(Sync.COMPLETE, null);
                            continue;
                        }
                    } finally {
                        inCall.set(null);
                    }
                }
                String symbol = probe.querySymbol();
                inCall.set(probe);
                try {
                    int status = call(probe.view.access(), symbol, probe.view.handle());
                    if (status == Status.CUDA_SUCCESS) {
                        probe.syncEnded(Sync.COMPLETE, null);
                    } else if (status == Status.CUDA_ERROR_NOT_READY) {
                        probe.asked();
                        pending = true;
                    } else {
                        probe.syncEnded(Sync.FAILED, symbol + " returned " + status);
                    }
                } catch (Throwable t) {
                    probe.syncEnded(Sync.FAILED, "cannot call " + symbol + ": " + t);
                } finally {
                    inCall.set(null);
                }
            }
            if (!pending) {
                return;
            }
            LockSupport.parkNanos(sleep);
            sleep = Math.min(sleep * 2, MAX_POLL_SLEEP_NANOS);
        }
    }

    /**
     * cudaStreamQuery of the streams events were last recorded on, asked once per stream and pass:
     * an ordinary stream that is idle has completed every event recorded on it (HandleView.recordedOn).
     */
    private final class StreamAnswers {
        private final Map<NativeAccess, Map<Long, Boolean>> idle = new java.util.IdentityHashMap<>();
        private NativeAccess lastAccess;
        private long lastStream;
        private boolean lastIdle;

        boolean idle(NativeAccess access, long stream) {
            if (access == lastAccess && stream == lastStream) {
                return lastIdle;
            }
            Map<Long, Boolean> byStream = idle.computeIfAbsent(access, a -> new java.util.HashMap<>());
            Boolean answer = byStream.get(stream);
            if (answer == null) {
                int status;
                try {
                    status = call(access, ExitCalls.STREAM_QUERY, stream);
                } catch (Throwable t) {
                    status = Integer.MIN_VALUE;
                }
                answer = status == Status.CUDA_SUCCESS;
                byStream.put(stream, answer);
            }
            lastAccess = access;
            lastStream = stream;
            lastIdle = answer;
            return answer;
        }
    }

    private static void settleStream(Item stream) {
        switch (stream.sync()) {
            case COMPLETE -> stream.settle(Outcome.SYNCHRONIZED, null);
            case FAILED -> stream.settle(Outcome.FAILED, stream.syncNote());
            default -> stream.settle(Outcome.TIMED_OUT, stream.syncNote());
        }
    }

    // ---- phase 2: destroy communicators, abort what will not go ----

    private void releaseCommunicators() {
        List<Item> comms = new ArrayList<>();
        List<Item> releasing = new ArrayList<>();
        boolean events = false;
        boolean memory = false;
        for (Item item : items) {
            if (item.view.kind() == Kind.COMM) {
                if (item.view.access() == null) {
                    item.settle(Outcome.FAILED, "no library instance was recorded to release it");
                } else if (item.view.access().cannotRelease() != null) {
                    item.settle(Outcome.NONE, item.view.access().cannotRelease());
                } else if (claim(item)) {
                    comms.add(item);
                } else if (item.applicationReleasing) {
                    releasing.add(item);
                }
            } else if (item.view.kind() == Kind.EVENT) {
                events = true;
            } else if (item.view.kind() == Kind.MEMORY) {
                memory = true;
            }
        }
        if (comms.isEmpty() && releasing.isEmpty()) {
            return;
        }
        long end = deadline - (events ? (long) (timeoutNanos * EVENT_DESTROY_SHARE) : 0)
                - (memory ? (long) (timeoutNanos * MEMORY_FREE_SHARE) : 0);
        long started = System.nanoTime();
        long destroyUntil = started + Math.max(0, (end - started) / 2);

        Map<Item, Future<Integer>> destroys = new LinkedHashMap<>();
        for (Item comm : comms) {
            destroys.put(comm, callAsync("ncclguard-cleanup-destroy-" + comm.view.hexHandle(), () -> {
                setDevice(comm.view.device());
                return call(comm.view.access(), ExitCalls.COMM_DESTROY, comm.view.handle());
            }));
        }
        Map<AbortGroup, List<Item>> toAbort = new LinkedHashMap<>();
        // The application's own destroy that has not returned by then is hung as any other: NCCL
        // lets another thread abort a communicator whose destroy does not return.
        awaitApplicationReleases(releasing, destroyUntil);
        for (Item comm : releasing) {
            if (!comm.view.claim().applicationReleasing()) {
                comm.settle(Outcome.NONE, RELEASED_BY_APPLICATION);
                continue;
            }
            String why = "the application's own release (ncclCommDestroy) had not returned after "
                    + millisSince(started) + " ms";
            if (end - System.nanoTime() <= 0) {
                comm.settle(Outcome.TIMED_OUT, why + "; no time left to abort");
            } else {
                comm.abortReason = why;
                toAbort.computeIfAbsent(new AbortGroup(comm.view.access(), comm.view.device()),
                        k -> new ArrayList<>()).add(comm);
            }
        }
        for (Map.Entry<Item, Future<Integer>> destroy : destroys.entrySet()) {
            Item comm = destroy.getKey();
            String why = destroyOutcome(comm, destroy.getValue(), destroyUntil, started);
            if (why != null && comm.inFlightNote != null) {
                why = why + " (" + comm.inFlightNote + ")";
            }
            if (why != null && end - System.nanoTime() <= 0) {
                // Aborting now could only race a destroy that may yet finish, with no time to see it.
                comm.settle(Outcome.TIMED_OUT, why + "; no time left to abort");
            } else if (why != null) {
                comm.abortReason = why;
                toAbort.computeIfAbsent(new AbortGroup(comm.view.access(), comm.view.device()),
                        k -> new ArrayList<>()).add(comm);
            }
        }
        if (toAbort.isEmpty()) {
            return;
        }
        Map<AbortGroup, Future<Void>> aborts = new LinkedHashMap<>();
        for (Map.Entry<AbortGroup, List<Item>> group : toAbort.entrySet()) {
            aborts.put(group.getKey(), callAsync("ncclguard-cleanup-abort-device-" + group.getKey().device(),
                    () -> {
                        abort(group.getKey(), group.getValue());
                        return null;
                    }));
        }
        long abortsStarted = System.nanoTime();
        for (Map.Entry<AbortGroup, Future<Void>> abort : aborts.entrySet()) {
            boolean returned = await(abort.getValue(), end);
            for (Item comm : toAbort.get(abort.getKey())) {
                settleAborted(comm, returned, abortsStarted);
            }
        }
    }

    /** Settles a destroyed communicator and answers null, or answers why it must be aborted. */
    private static String destroyOutcome(Item comm, Future<Integer> destroy, long until, long started) {
        if (!await(destroy, until)) {
            return "ncclCommDestroy did not return within " + millisSince(started) + " ms";
        }
        try {
            int status = destroy.get();
            if (status == Status.NCCL_SUCCESS) {
                comm.settle(Outcome.DESTROYED, comm.inFlightNote);
                return null;
            }
            if (status == Status.NCCL_IN_PROGRESS) {
                // A nonblocking communicator: its release goes on inside NCCL, and the handle is
                // no longer ours to poll or abort.
                comm.settle(Outcome.DESTROYED, "ncclCommDestroy returned ncclInProgress; NCCL finishes the release");
                return null;
            }
            return "ncclCommDestroy returned " + status;
        } catch (ExecutionException e) {
            return "cannot call ncclCommDestroy: " + e.getCause();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "interrupted while waiting for ncclCommDestroy";
        }
    }

    /**
     * Aborts one library's communicators of one device on this (cleanup) thread; NCCL's group state
     * is per thread, so start, aborts and end must share it.
     */
    private void abort(AbortGroup group, List<Item> comms) {
        setDevice(group.device());
        NativeAccess nccl = group.access();
        boolean grouped = comms.size() > 1 && callStatus(nccl, ExitCalls.GROUP_START) == Status.NCCL_SUCCESS;
        // Without a group (a single communicator, or a failed ncclGroupStart) each abort still works.
        for (Item comm : comms) {
            comm.abortStarted = true;
            comm.abortStatus = callStatus(nccl, ExitCalls.COMM_ABORT, comm.view.handle());
        }
        if (grouped) {
            int end = callStatus(nccl, ExitCalls.GROUP_END);
            for (Item comm : comms) {
                comm.groupEndStatus = end;
            }
        }
    }

    private static void settleAborted(Item comm, boolean returned, long started) {
        String after = " (after: " + comm.abortReason + ")";
        Integer abort = comm.abortStatus;
        Integer groupEnd = comm.groupEndStatus;
        if (!returned) {
            String waiting = abort != null ? "ncclGroupEnd did not return"
                    : comm.abortStarted ? "ncclCommAbort did not return"
                    : "not aborted: an earlier call on its cleanup thread did not return";
            comm.settle(Outcome.TIMED_OUT, waiting + " within " + millisSince(started) + " ms" + after);
        } else if (abort == null || abort == Integer.MIN_VALUE) {
            comm.settle(Outcome.FAILED, "cannot call ncclCommAbort" + after);
        } else if (abort != Status.NCCL_SUCCESS) {
            comm.settle(Outcome.FAILED, "ncclCommAbort returned " + abort + after);
        } else if (groupEnd != null && groupEnd != Status.NCCL_SUCCESS) {
            comm.settle(Outcome.FAILED, "ncclGroupEnd returned " + groupEnd + " for the grouped aborts" + after);
        } else {
            comm.settle(Outcome.ABORTED, comm.abortReason);
        }
    }

    // ---- phase 3: destroy events ----

    private void destroyEvents() {
        if (!releasingEvents.isEmpty()) {
            long started = System.nanoTime();
            awaitApplicationReleases(releasingEvents, deadline);
            for (Item event : releasingEvents) {
                if (event.view.claim().applicationReleasing()) {
                    event.settle(Outcome.TIMED_OUT, "the application's own cudaEventDestroy had not returned after "
                            + millisSince(started) + " ms");
                } else {
                    event.settle(Outcome.NONE, RELEASED_BY_APPLICATION);
                }
            }
        }
        List<Item> events = new ArrayList<>();
        for (Item item : items) {
            if (item.view.kind() != Kind.EVENT || item.settled()) {
                continue;
            }
            switch (item.sync()) {
                case COMPLETE, TIMED_OUT -> events.add(item);
                // A query that failed or never returned says the handle is not safe to touch again.
                default -> item.settle(item.sync() == Sync.FAILED ? Outcome.FAILED : Outcome.TIMED_OUT,
                        item.syncNote());
            }
        }
        if (events.isEmpty()) {
            return;
        }
        AtomicReference<Item> inCall = new AtomicReference<>();
        long started = System.nanoTime();
        Future<Void> destroyer = callAsync("ncclguard-cleanup-events", () -> {
            for (Item event : events) {
                if (deadline - System.nanoTime() <= 0) {
                    break; // the rest is "not destroyed before the deadline": nothing hangs
                }
                inCall.set(event);
                event.destroyStatus = callStatus(event.view.access(), ExitCalls.EVENT_DESTROY, event.view.handle());
            }
            inCall.set(null);
            return null;
        });
        await(destroyer, deadline);
        NotReached notReached = new NotReached();
        for (Item event : events) {
            settleEvent(event, event == inCall.get(), started, notReached);
        }
    }

    /**
     * The note of an event not destroyed before the deadline, made once per distinct sync note
     * (all of them share one, or a few): 200,000 concatenations in cold code took a third of a second.
     */
    private static final class NotReached {
        private static final String COMPLETED = "not destroyed before the deadline (its work had completed)";
        private String lastSyncNote;
        private String lastNote;

        String note(boolean completed, String syncNote) {
            if (completed) {
                return COMPLETED;
            }
            if (syncNote != lastSyncNote) {
                lastSyncNote = syncNote;
                lastNote = "not destroyed before the deadline; " + syncNote;
            }
            return lastNote;
        }
    }

    private static void settleEvent(Item event, boolean inCall, long started, NotReached notReached) {
        Integer status = event.destroyStatus;
        boolean completed = event.sync() == Sync.COMPLETE;
        if (status == null) {
            event.settle(Outcome.TIMED_OUT, inCall
                    ? "cudaEventDestroy did not return within " + millisSince(started) + " ms"
                            + (completed ? " (its work had completed)" : "; " + event.syncNote())
                    : notReached.note(completed, event.syncNote()));
        } else if (status == Integer.MIN_VALUE) {
            event.settle(Outcome.FAILED, "cannot call cudaEventDestroy");
        } else if (status != Status.CUDA_SUCCESS) {
            event.settle(Outcome.FAILED, "cudaEventDestroy returned " + status);
        } else if (completed) {
            event.settle(Outcome.SYNCHRONIZED, null);
        } else {
            // cudaEventDestroy on a pending event is legal: CUDA frees it once its work completes.
            event.settle(Outcome.DESTROYED, event.syncNote() + "; destroyed anyway, CUDA frees it when the work completes");
        }
    }

    // ---- before the communicators: their device communicators ----

    private void destroyDeviceCommunicators() {
        List<Item> devComms = new ArrayList<>();
        for (Item item : items) {
            if (item.view.kind() != Kind.DEVCOMM) {
                continue;
            }
            if (item.view.access() == null) {
                item.settle(Outcome.FAILED, "no library instance was recorded to destroy it");
            } else if (item.view.devComm() == null || item.view.devComm().bytes() == null) {
                item.settle(Outcome.FAILED, "its ncclDevComm struct could not be read at its creation;"
                        + " NCCL frees it with its communicator");
            } else if (claim(item)) {
                devComms.add(item);
            }
        }
        if (devComms.isEmpty()) {
            return;
        }
        AtomicReference<Item> inCall = new AtomicReference<>();
        long started = System.nanoTime();
        long until = Math.min(deadline, started + (long) (timeoutNanos * DEVCOMM_DESTROY_SHARE));
        Future<Void> destroyer = callAsync("ncclguard-cleanup-devcomms", () -> {
            for (Item d : devComms) {
                inCall.set(d);
                setDevice(d.view.device());
                d.destroyStatus = callNoting(d, ExitCalls.DEVCOMM_DESTROY, d.view.devComm().comm(),
                        d.view.devComm().bytes());
            }
            inCall.set(null);
            return null;
        });
        await(destroyer, until);
        for (Item d : devComms) {
            Integer status = d.destroyStatus;
            if (status == null) {
                d.settle(Outcome.TIMED_OUT, d == inCall.get()
                        ? ExitCalls.DEVCOMM_DESTROY + " did not return within " + millisSince(started) + " ms"
                        : "not destroyed before its share of the deadline; NCCL frees it with its communicator");
            } else if (status == Integer.MIN_VALUE) {
                d.settle(Outcome.FAILED, "cannot call " + ExitCalls.DEVCOMM_DESTROY + ": " + d.callFailure);
            } else if (status != Status.NCCL_SUCCESS) {
                d.settle(Outcome.FAILED, ExitCalls.DEVCOMM_DESTROY + " returned " + status);
            } else {
                d.settle(Outcome.DESTROYED, null);
            }
        }
    }

    // ---- last: memory, once the communicators that may have it registered are gone ----

    private void freeMemory() {
        List<Item> memory = new ArrayList<>();
        String inUse = null;
        for (Item item : items) {
            if (item.view.kind() == Kind.COMM && inUse == null) {
                LeakOutcome done = item.result.get();
                if (done == null || (done.outcome() != Outcome.DESTROYED && done.outcome() != Outcome.ABORTED)) {
                    inUse = "communicator " + item.view.hexHandle() + " was not released by cleanup ("
                            + (done == null ? "not reached" : done.outcome().word()) + ") and may still use it";
                }
            } else if (item.view.kind() == Kind.MEMORY) {
                memory.add(item);
            }
        }
        if (memory.isEmpty()) {
            return;
        }
        List<Item> toFree = new ArrayList<>();
        for (Item m : memory) {
            if (inUse != null) {
                m.settle(Outcome.FAILED, "not freed: " + inUse);
            } else if (m.view.access() == null) {
                m.settle(Outcome.FAILED, "no library instance was recorded to free it");
            } else if (claim(m)) {
                toFree.add(m);
            }
        }
        if (toFree.isEmpty()) {
            return;
        }
        AtomicReference<Item> inCall = new AtomicReference<>();
        long started = System.nanoTime();
        Future<Void> freer = callAsync("ncclguard-cleanup-memory", () -> {
            for (Item m : toFree) {
                inCall.set(m);
                setDevice(m.view.device());
                m.destroyStatus = callNoting(m, ExitCalls.MEM_FREE, m.view.handle());
            }
            inCall.set(null);
            return null;
        });
        await(freer, deadline);
        for (Item m : toFree) {
            Integer status = m.destroyStatus;
            if (status == null) {
                m.settle(Outcome.TIMED_OUT, m == inCall.get()
                        ? ExitCalls.MEM_FREE + " did not return within " + millisSince(started) + " ms"
                        : "not freed before the deadline");
            } else if (status == Integer.MIN_VALUE) {
                m.settle(Outcome.FAILED, "cannot call " + ExitCalls.MEM_FREE + ": " + m.callFailure);
            } else if (status != Status.NCCL_SUCCESS) {
                m.settle(Outcome.FAILED, ExitCalls.MEM_FREE + " returned " + status);
            } else {
                m.settle(Outcome.FREED, null);
            }
        }
    }

    // ---- shared ----

    private void setDevice(int device) {
        NativeAccess cudart = cudaRuntime.cudart();
        if (cudart == null || device < 0) {
            return;
        }
        // Best effort: NCCL switches to the communicator's device itself; this only spares it
        // from running on whatever device a fresh thread starts with.
        callStatus(cudart, ExitCalls.SET_DEVICE, device);
    }

    /** The call's status, or Integer.MIN_VALUE when it threw (no such symbol, bad library). */
    private int callStatus(NativeAccess access, String symbol, Object... args) {
        try {
            return call(access, symbol, args);
        } catch (Throwable t) {
            return Integer.MIN_VALUE;
        }
    }

    /** {@link #callStatus} through the item's own access, keeping why a call could not be made. */
    private int callNoting(Item item, String symbol, Object... args) {
        try {
            return call(item.view.access(), symbol, args);
        } catch (Throwable t) {
            item.callFailure = String.valueOf(t);
            return Integer.MIN_VALUE;
        }
    }

    /** Every native call of cleanup goes through here, so that one that never returns is known. */
    private int call(NativeAccess access, String symbol, Object... args) {
        inNative.incrementAndGet();
        try {
            return access.call(symbol, args);
        } finally {
            inNative.decrementAndGet();
        }
    }

    private <T> Future<T> callAsync(String threadName, Callable<T> work) {
        CompletableFuture<T> result = new CompletableFuture<>();
        Thread thread = new Thread(() -> {
            try {
                result.complete(work.call());
            } catch (Throwable t) {
                result.completeExceptionally(t);
            }
        }, threadName);
        // A native call that never returns must not keep the JVM from exiting.
        thread.setDaemon(true);
        thread.start();
        return result;
    }

    /** Waits for {@code future} until the nanoTime {@code until}; answers whether it completed. */
    private static boolean await(Future<?> future, long until) {
        long left = until - System.nanoTime();
        try {
            if (left <= 0) {
                return future.isDone();
            }
            future.get(left, TimeUnit.NANOSECONDS);
            return true;
        } catch (TimeoutException e) {
            return false;
        } catch (ExecutionException e) {
            return true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return future.isDone();
        }
    }

    private static long millisSince(long startedNanos) {
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startedNanos);
    }

    private void settleRest(LeakOutcome result) {
        for (Item item : items) {
            item.settle(result.outcome(), result.note());
        }
    }

    private Map<HandleView, LeakOutcome> results() {
        Map<HandleView, LeakOutcome> results = new LinkedHashMap<>();
        for (Item item : items) {
            LeakOutcome result = item.result.get();
            results.put(item.view, result != null ? result
                    : LeakOutcome.of(Outcome.FAILED, "not reached before the deadline"));
        }
        return results;
    }

    private record AbortGroup(NativeAccess access, int device) {
    }

    private enum Sync { PENDING, COMPLETE, FAILED, TIMED_OUT, HUNG }

    /**
     * One leak's progress. Worker threads may still write after the caller has given up on them,
     * so the first settled result wins and the polling state is changed under the item's lock.
     */
    private static final class Item {
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

        Item(HandleView view) {
            this.view = view;
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
}
