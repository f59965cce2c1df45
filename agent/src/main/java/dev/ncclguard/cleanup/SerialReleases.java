package dev.ncclguard.cleanup;

import static dev.ncclguard.cleanup.NativeCalls.await;
import static dev.ncclguard.cleanup.NativeCalls.millisSince;

import dev.ncclguard.catalog.ExitCalls;
import dev.ncclguard.catalog.Kind;
import dev.ncclguard.catalog.Status;
import dev.ncclguard.cleanup.LeakProgress.Sync;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The releases cleanup makes one after another on a single thread of theirs, in the order they
 * run: device communicators (before their communicators), events and memory (after them). The
 * device communicators and the memory are released the same way ({@link #oneByOne}); they differ
 * in what is checked first, the call, its thread, how long it may take and the outcome's words.
 */
final class SerialReleases {
    private final List<LeakProgress> items;
    private final NativeCalls calls;
    private final Cleanup.Deadline deadline;

    SerialReleases(List<LeakProgress> items, NativeCalls calls, Cleanup.Deadline deadline) {
        this.items = items;
        this.calls = calls;
        this.deadline = deadline;
    }

    // ---- device communicators, while their communicators are alive ----

    /**
     * ncclDevCommDestroy of each leaked device communicator, within its share of the timeout: the
     * struct it reads is a copy of the one NCCL filled in, which the tracker kept.
     */
    void destroyDeviceCommunicators() {
        List<LeakProgress> devComms = new ArrayList<>();
        for (LeakProgress item : items) {
            if (item.view.kind() != Kind.DEVCOMM) {
                continue;
            }
            if (item.view.access() == null) {
                item.settle(Outcome.FAILED, "no library instance was recorded to destroy it");
            } else if (item.view.devComm() == null || item.view.devComm().bytes() == null) {
                item.settle(Outcome.FAILED, "its ncclDevComm struct could not be read at its creation;"
                        + " NCCL frees it with its communicator");
            } else if (item.claim()) {
                devComms.add(item);
            }
        }
        oneByOne(devComms, OneByOne.DEVCOMM_DESTROY);
    }

    // ---- events, after the communicators ----

    /**
     * cudaEventDestroy of each claimed event, after the application's own destroys in progress
     * ({@code releasingEvents}) have returned or the deadline has passed.
     */
    void destroyEvents(List<LeakProgress> releasingEvents) {
        if (!releasingEvents.isEmpty()) {
            long started = System.nanoTime();
            LeakProgress.awaitApplicationReleases(releasingEvents, deadline.at());
            for (LeakProgress event : releasingEvents) {
                if (event.view.claim().applicationReleasing()) {
                    event.settle(Outcome.TIMED_OUT, "the application's own cudaEventDestroy had not returned after "
                            + millisSince(started) + " ms");
                } else {
                    event.settle(Outcome.NONE, LeakProgress.RELEASED_BY_APPLICATION);
                }
            }
        }
        List<LeakProgress> events = new ArrayList<>();
        for (LeakProgress item : items) {
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
        AtomicReference<LeakProgress> inCall = new AtomicReference<>();
        long started = System.nanoTime();
        Future<Void> destroyer = calls.callAsync("ncclguard-cleanup-events", () -> {
            for (LeakProgress event : events) {
                if (deadline.at() - System.nanoTime() <= 0) {
                    break; // the rest is "not destroyed before the deadline": nothing hangs
                }
                inCall.set(event);
                event.destroyStatus = calls.callNoting(event, ExitCalls.EVENT_DESTROY, event.view.handle());
            }
            inCall.set(null);
            return null;
        });
        await(destroyer, deadline.at());
        NotReached notReached = new NotReached();
        for (LeakProgress event : events) {
            settleEvent(event, event == inCall.get(), started, notReached);
        }
    }

    private static void settleEvent(LeakProgress event, boolean inCall, long started, NotReached notReached) {
        Integer status = event.destroyStatus;
        boolean completed = event.sync() == Sync.COMPLETE;
        if (status == null) {
            event.settle(Outcome.TIMED_OUT, inCall
                    ? "cudaEventDestroy did not return within " + millisSince(started) + " ms"
                            + (completed ? " (its work had completed)" : "; " + event.syncNote())
                    : notReached.note(completed, event.syncNote()));
        } else if (status == Integer.MIN_VALUE) {
            String failure = event.callFailure;
            event.settle(Outcome.FAILED, failure != null && failure.startsWith("could not ") ? failure
                    : "cannot call cudaEventDestroy");
        } else if (status != Status.CUDA_SUCCESS) {
            event.settle(Outcome.FAILED, "cudaEventDestroy returned " + status);
        } else if (completed) {
            event.settle(Outcome.SYNCHRONIZED, null);
        } else {
            // cudaEventDestroy on a pending event is legal: CUDA frees it once its work completes.
            event.settle(Outcome.DESTROYED, event.syncNote() + "; destroyed anyway, CUDA frees it when the work completes");
        }
    }

    /**
     * The note of an event not destroyed before the deadline, made once per distinct sync note
     * (all of them share one, or a few): docs/performance.md, "Cleanup's code at exit".
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

    // ---- memory, last: once the communicators that may have it registered are gone ----

    /** ncclMemFree of each leaked ncclMemAlloc, unless a leaked communicator was not released. */
    void freeMemory() {
        List<LeakProgress> memory = new ArrayList<>();
        String inUse = null;
        for (LeakProgress item : items) {
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
        List<LeakProgress> toFree = new ArrayList<>();
        for (LeakProgress m : memory) {
            if (inUse != null) {
                m.settle(Outcome.FAILED, "not freed: " + inUse);
            } else if (m.view.access() == null) {
                m.settle(Outcome.FAILED, "no library instance was recorded to free it");
            } else if (m.claim()) {
                toFree.add(m);
            }
        }
        oneByOne(toFree, OneByOne.MEM_FREE);
    }

    // ---- shared by the device communicators and the memory ----

    /**
     * What differs between the releases {@link #oneByOne} makes: the thread, the NCCL call and its
     * arguments, how long it may take from the nanoTime it started, the note of one not reached by
     * then, the outcome of one that succeeded. Constants with bodies, not lambdas: nothing links a
     * method handle at exit (docs/performance.md, "Exit with 100,000 leaked handles").
     */
    private enum OneByOne {
        DEVCOMM_DESTROY("ncclguard-cleanup-devcomms", ExitCalls.DEVCOMM_DESTROY,
                "not destroyed before its share of the deadline; NCCL frees it with its communicator",
                Outcome.DESTROYED) {
            @Override
            Object[] args(LeakProgress devComm) {
                return new Object[] {devComm.view.devComm().comm(), devComm.view.devComm().bytes()};
            }

            @Override
            long until(Cleanup.Deadline deadline, long started) {
                return deadline.share(started, Cleanup.DEVCOMM_DESTROY_SHARE);
            }
        },
        MEM_FREE("ncclguard-cleanup-memory", ExitCalls.MEM_FREE, "not freed before the deadline", Outcome.FREED) {
            @Override
            Object[] args(LeakProgress memory) {
                return new Object[] {memory.view.handle()};
            }

            @Override
            long until(Cleanup.Deadline deadline, long started) {
                return deadline.at();
            }
        };

        final String thread;
        final String symbol;
        final String notReached;
        final Outcome released;

        OneByOne(String thread, String symbol, String notReached, Outcome released) {
            this.thread = thread;
            this.symbol = symbol;
            this.notReached = notReached;
            this.released = released;
        }

        abstract Object[] args(LeakProgress item);

        abstract long until(Cleanup.Deadline deadline, long started);
    }

    /** Releases {@code claimed}, in order, on one thread, and settles each (none: nothing to do). */
    private void oneByOne(List<LeakProgress> claimed, OneByOne how) {
        if (claimed.isEmpty()) {
            return;
        }
        AtomicReference<LeakProgress> inCall = new AtomicReference<>();
        long started = System.nanoTime();
        long until = how.until(deadline, started);
        Future<Void> releaser = calls.callAsync(how.thread, () -> {
            for (LeakProgress item : claimed) {
                inCall.set(item);
                calls.setDevice(item.view.device());
                item.destroyStatus = calls.callNoting(item, how.symbol, how.args(item));
            }
            inCall.set(null);
            return null;
        });
        await(releaser, until);
        for (LeakProgress item : claimed) {
            Integer status = item.destroyStatus;
            if (status == null) {
                item.settle(Outcome.TIMED_OUT, item == inCall.get()
                        ? how.symbol + " did not return within " + millisSince(started) + " ms"
                        : how.notReached);
            } else if (status == Integer.MIN_VALUE) {
                item.settle(Outcome.FAILED, item.callFailure.startsWith("could not ") ? item.callFailure
                        : "cannot call " + how.symbol + ": " + item.callFailure);
            } else if (status != Status.NCCL_SUCCESS) {
                item.settle(Outcome.FAILED, how.symbol + " returned " + status);
            } else {
                item.settle(how.released, null);
            }
        }
    }
}
