package dev.ncclguard.cleanup;

import static dev.ncclguard.cleanup.NativeCalls.await;
import static dev.ncclguard.cleanup.NativeCalls.millisSince;

import dev.ncclguard.catalog.ExitCalls;
import dev.ncclguard.catalog.Kind;
import dev.ncclguard.catalog.Status;
import dev.ncclguard.track.NativeAccess;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;

/**
 * Cleanup's communicators: destroys each leaked one on a thread of its own, for half the time left
 * to them, then aborts those whose destroy failed or did not return (and those whose own destroy
 * the application has not returned from), those of one device and library together, inside
 * ncclGroupStart/ncclGroupEnd.
 */
final class CommRelease {
    private final List<LeakProgress> items;
    private final NativeCalls calls;

    CommRelease(List<LeakProgress> items, NativeCalls calls) {
        this.items = items;
        this.calls = calls;
    }

    /** Destroys, then aborts, by the nanoTime {@code end}. */
    void run(long end) {
        List<LeakProgress> comms = new ArrayList<>();
        List<LeakProgress> releasing = new ArrayList<>();
        for (LeakProgress item : items) {
            if (item.view.kind() != Kind.COMM) {
                continue;
            }
            if (item.view.access() == null) {
                item.settle(Outcome.FAILED, "no library instance was recorded to release it");
            } else if (item.view.access().cannotRelease() != null) {
                item.settle(Outcome.NONE, item.view.access().cannotRelease());
            } else if (item.claim()) {
                comms.add(item);
            } else if (item.applicationReleasing) {
                releasing.add(item);
            }
        }
        if (comms.isEmpty() && releasing.isEmpty()) {
            return;
        }
        long started = System.nanoTime();
        long destroyUntil = started + Math.max(0, (end - started) / 2);

        Map<LeakProgress, Future<Integer>> destroys = new LinkedHashMap<>();
        for (LeakProgress comm : comms) {
            destroys.put(comm, calls.callAsync("ncclguard-cleanup-destroy-" + comm.view.hexHandle(), () -> {
                calls.setDevice(comm.view.device());
                return calls.call(comm.view.access(), ExitCalls.COMM_DESTROY, comm.view.handle());
            }));
        }
        Map<AbortGroup, List<LeakProgress>> toAbort = new LinkedHashMap<>();
        // The application's own destroy that has not returned by then is hung as any other: NCCL
        // lets another thread abort a communicator whose destroy does not return.
        LeakProgress.awaitApplicationReleases(releasing, destroyUntil);
        for (LeakProgress comm : releasing) {
            if (!comm.view.claim().applicationReleasing()) {
                comm.settle(Outcome.NONE, LeakProgress.RELEASED_BY_APPLICATION);
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
        for (Map.Entry<LeakProgress, Future<Integer>> destroy : destroys.entrySet()) {
            LeakProgress comm = destroy.getKey();
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
        for (Map.Entry<AbortGroup, List<LeakProgress>> group : toAbort.entrySet()) {
            aborts.put(group.getKey(), calls.callAsync("ncclguard-cleanup-abort-device-" + group.getKey().device(),
                    () -> {
                        abort(group.getKey(), group.getValue());
                        return null;
                    }));
        }
        long abortsStarted = System.nanoTime();
        for (Map.Entry<AbortGroup, Future<Void>> abort : aborts.entrySet()) {
            boolean returned = await(abort.getValue(), end);
            for (LeakProgress comm : toAbort.get(abort.getKey())) {
                settleAborted(comm, returned, abortsStarted);
            }
        }
    }

    /** Settles a destroyed communicator and answers null, or answers why it must be aborted. */
    private static String destroyOutcome(LeakProgress comm, Future<Integer> destroy, long until, long started) {
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
    private void abort(AbortGroup group, List<LeakProgress> comms) {
        calls.setDevice(group.device());
        NativeAccess nccl = group.access();
        boolean grouped = comms.size() > 1 && calls.callStatus(nccl, ExitCalls.GROUP_START) == Status.NCCL_SUCCESS;
        // Without a group (a single communicator, or a failed ncclGroupStart) each abort still works.
        for (LeakProgress comm : comms) {
            comm.abortStarted = true;
            comm.abortStatus = calls.callStatus(nccl, ExitCalls.COMM_ABORT, comm.view.handle());
        }
        if (grouped) {
            int end = calls.callStatus(nccl, ExitCalls.GROUP_END);
            for (LeakProgress comm : comms) {
                comm.groupEndStatus = end;
            }
        }
    }

    private static void settleAborted(LeakProgress comm, boolean returned, long started) {
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

    private record AbortGroup(NativeAccess access, int device) {
    }
}
