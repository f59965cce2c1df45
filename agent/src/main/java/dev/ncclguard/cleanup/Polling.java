package dev.ncclguard.cleanup;

import static dev.ncclguard.cleanup.NativeCalls.await;
import static dev.ncclguard.cleanup.NativeCalls.millisSince;

import dev.ncclguard.catalog.ExitCalls;
import dev.ncclguard.catalog.Kind;
import dev.ncclguard.catalog.Status;
import dev.ncclguard.cleanup.LeakProgress.Sync;
import dev.ncclguard.track.NativeAccess;
import dev.ncclguard.track.NoCudaLibrary;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

/**
 * Cleanup's first phase: waits for pending events and unsynchronized streams by polling
 * cudaEventQuery and cudaStreamQuery (a synchronize call could block past any deadline), then for
 * the NCCL operations in flight on the leaked communicators. Settles the streams; events are
 * claimed here and destroyed in {@link SerialReleases#destroyEvents}.
 */
final class Polling {
    private final List<LeakProgress> items;
    private final NativeCalls calls;
    private final InFlightWork inFlight;
    /** Events whose cudaEventDestroy the application had entered and not returned from. */
    private final List<LeakProgress> releasingEvents = new ArrayList<>();

    Polling(List<LeakProgress> items, NativeCalls calls, InFlightWork inFlight) {
        this.items = items;
        this.calls = calls;
        this.inFlight = inFlight;
    }

    /** Polls from {@code started} until {@code until}; answers the events the application is releasing. */
    List<LeakProgress> run(long started, long until) {
        pollEventsAndStreams(started, until);
        waitForWorkInFlight(until);
        return releasingEvents;
    }

    private void pollEventsAndStreams(long started, long until) {
        List<LeakProgress> probes = new ArrayList<>();
        for (LeakProgress item : items) {
            if (item.view.kind() != Kind.EVENT && item.view.kind() != Kind.STREAM) {
                continue;
            }
            if (item.view.access() == null) {
                item.settle(Outcome.FAILED, "no library instance was recorded to query it");
            } else if (item.view.kind() == Kind.EVENT && !item.claim()) {
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
        AtomicReference<LeakProgress> inCall = new AtomicReference<>();
        Future<Void> poller = calls.callAsync("ncclguard-cleanup-sync", () -> {
            poll(probes, stop, inCall);
            return null;
        });
        await(poller, until);
        stop.set(true);
        long waitedMillis = millisSince(started);
        // the poller stops before its next call: one it is inside now returns in microseconds
        // unless it hangs, so only one still in after the grace did not return
        await(poller, System.nanoTime() + Cleanup.HANG_GRACE_NANOS);
        // the notes are the same for every probe: made once (docs/performance.md, "Cleanup's code at exit")
        String stillPending = "still pending after " + waitedMillis + " ms";
        String notQueried = "not queried before the deadline (" + waitedMillis + " ms)";
        for (LeakProgress probe : probes) {
            probe.freezeSync(probe == inCall.get(), waitedMillis, stillPending, notQueried);
        }
        for (LeakProgress probe : probes) {
            if (probe.view.kind() == Kind.STREAM) {
                settleStream(probe);
            }
        }
    }

    private void poll(List<LeakProgress> probes, AtomicBoolean stop, AtomicReference<LeakProgress> inCall) {
        long sleep = Cleanup.FIRST_POLL_SLEEP_NANOS;
        while (!stop.get()) {
            boolean pending = false;
            StreamAnswers streams = new StreamAnswers(); // a stream's answer holds for one pass
            for (LeakProgress probe : probes) {
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
                            // its stream got past its last record: complete, without a query of its own
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
                    int status = calls.call(probe.view.access(), symbol, probe.view.handle());
                    if (status == Status.CUDA_SUCCESS) {
                        probe.syncEnded(Sync.COMPLETE, null);
                    } else if (status == Status.CUDA_ERROR_NOT_READY) {
                        probe.asked();
                        pending = true;
                    } else {
                        probe.syncEnded(Sync.FAILED, symbol + " returned " + status);
                    }
                } catch (NoCudaLibrary t) {
                    probe.syncEnded(Sync.FAILED, t.wording("query", probe.view.kind().word(), probe.view.handle()));
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
            sleep = Math.min(sleep * 2, Cleanup.MAX_POLL_SLEEP_NANOS);
        }
    }

    /**
     * cudaStreamQuery of the streams events were last recorded on, asked once per stream and pass:
     * an ordinary stream that is idle has completed every event recorded on it (HandleView.recordedOn).
     */
    private final class StreamAnswers {
        private final Map<NativeAccess, Map<Long, Boolean>> idle = new IdentityHashMap<>();
        private NativeAccess lastAccess;
        private long lastStream;
        private boolean lastIdle;

        boolean idle(NativeAccess access, long stream) {
            if (access == lastAccess && stream == lastStream) {
                return lastIdle;
            }
            Map<Long, Boolean> byStream = idle.computeIfAbsent(access, a -> new HashMap<>());
            Boolean answer = byStream.get(stream);
            if (answer == null) {
                int status;
                try {
                    status = calls.call(access, ExitCalls.STREAM_QUERY, stream);
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

    private static void settleStream(LeakProgress stream) {
        switch (stream.sync()) {
            case COMPLETE -> stream.settle(Outcome.SYNCHRONIZED, null);
            case FAILED -> stream.settle(Outcome.FAILED, stream.syncNote());
            default -> stream.settle(Outcome.TIMED_OUT, stream.syncNote());
        }
    }

    /**
     * Waits, until {@code until}, for the operations NCCL's profiler plugin says are in flight on
     * the leaked communicators, so that the destroy does not pull a communicator from under them.
     * A question to the agent's own library: it answers at once, so no thread of its own.
     */
    private void waitForWorkInFlight(long until) {
        List<LeakProgress> busy = new ArrayList<>();
        List<Long> counts = new ArrayList<>();
        for (LeakProgress item : items) {
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
        long sleep = Cleanup.FIRST_POLL_SLEEP_NANOS;
        boolean left = true;
        while (left && until - System.nanoTime() > 0) {
            left = false;
            for (LeakProgress comm : busy) {
                left |= inFlight.count(comm.view) > 0;
            }
            if (left) {
                LockSupport.parkNanos(Math.min(sleep, Math.max(1, until - System.nanoTime())));
                sleep = Math.min(sleep * 2, Cleanup.MAX_POLL_SLEEP_NANOS);
            }
        }
        long waited = millisSince(started);
        for (int i = 0; i < busy.size(); i++) {
            LeakProgress comm = busy.get(i);
            long now = inFlight.count(comm.view);
            comm.inFlightNote = now == 0
                    ? "waited " + waited + " ms for its " + counts.get(i) + " operation(s) in flight, then destroyed it"
                    : now + " operation(s) still in flight after " + waited + " ms of waiting";
        }
    }
}
