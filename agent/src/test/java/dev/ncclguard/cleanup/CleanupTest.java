package dev.ncclguard.cleanup;

import static dev.ncclguard.cleanup.Outcome.ABORTED;
import static dev.ncclguard.cleanup.Outcome.DESTROYED;
import static dev.ncclguard.cleanup.Outcome.FAILED;
import static dev.ncclguard.cleanup.Outcome.NONE;
import static dev.ncclguard.cleanup.Outcome.SYNCHRONIZED;
import static dev.ncclguard.cleanup.Outcome.TIMED_OUT;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ncclguard.catalog.Kind;
import dev.ncclguard.catalog.Status;
import dev.ncclguard.cleanup.FakeLibrary.Call;
import dev.ncclguard.track.HandleView;
import dev.ncclguard.track.NativeAccess;
import dev.ncclguard.track.NoCudaLibrary;
import dev.ncclguard.track.ReleaseClaim;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class CleanupTest {
    /** Far beyond any cleanup timeout used here: a test only fails on it if cleanup blocks. */
    private static final Duration RETURNS_WITHIN = Duration.ofSeconds(30);
    /** Short enough to keep the suite quick, long enough that a busy machine still starts the threads. */
    private static final Duration SHORT = Duration.ofMillis(1500);
    private static final Duration LONG = Duration.ofSeconds(20);
    private static final Set<String> UNBOUNDED =
            Set.of("cudaEventSynchronize", "cudaStreamSynchronize", "cudaDeviceSynchronize");

    private final FakeLibrary.CallLog log = new FakeLibrary.CallLog();
    private final FakeLibrary nccl = new FakeLibrary("libnccl.so.2", log);
    private final FakeLibrary cudart = new FakeLibrary("libcudart.so.13", log);

    @AfterEach
    void neverSynchronizesUnboundedAndReleasesHungThreads() {
        log.releaseHangs();
        for (Call call : log.calls()) {
            assertTrue(!UNBOUNDED.contains(call.symbol()), "cleanup called " + call.symbol());
        }
    }

    private static HandleView comm(long handle, int device, NativeAccess access) {
        return new HandleView(Kind.COMM, handle, "ncclCommInitRank", "jna-interface", "main", 0L, null,
                device, Map.of("rank", 0, "nranks", 2, "device", device), access);
    }

    private static HandleView event(long handle, NativeAccess access) {
        return new HandleView(Kind.EVENT, handle, "cudaEventCreate", "jna-interface", "main", 0L, null,
                0, Map.of("device", 0), access);
    }

    private static HandleView stream(long handle, NativeAccess access) {
        return new HandleView(Kind.STREAM, handle, "cudaStreamCreate", "jna-interface", "main", 0L, null,
                0, Map.of("pendingOps", 3L, "device", 0), access);
    }

    private Map<HandleView, LeakOutcome> run(Duration timeout, HandleView... leaks) {
        return assertTimeoutPreemptively(RETURNS_WITHIN,
                () -> Cleanup.run(List.of(leaks), timeout, new CudaRuntime(cudart)));
    }

    private static long seqOfFirst(List<Call> calls) {
        return calls.get(0).seq();
    }

    private static long seqOfLast(List<Call> calls) {
        return calls.get(calls.size() - 1).seq();
    }

    @Test
    void communicatorIsDestroyedOnACleanupThreadAfterSettingItsDevice() {
        HandleView comm = comm(0x10, 1, nccl);
        Map<HandleView, LeakOutcome> results = run(LONG, comm);

        assertEquals(new LeakOutcome(DESTROYED, null), results.get(comm));
        List<Call> calls = log.calls();
        assertEquals(List.of("cudaSetDevice", "ncclCommDestroy"), calls.stream().map(Call::symbol).toList());
        assertEquals(1, calls.get(0).arg(0));
        assertEquals(0x10L, calls.get(1).arg(0));
        assertEquals(calls.get(0).thread(), calls.get(1).thread());
        assertNotEquals(Thread.currentThread().getName(), calls.get(1).thread());
    }

    @Test
    void pendingEventIsPolledUntilCompleteThenDestroyed() {
        cudart.answerFor("cudaEventQuery", 3, Status.CUDA_ERROR_NOT_READY, Status.CUDA_SUCCESS);
        HandleView event = event(0x20, cudart);
        Map<HandleView, LeakOutcome> results = run(LONG, event);

        assertEquals(new LeakOutcome(SYNCHRONIZED, null), results.get(event));
        assertEquals(4, log.calls("cudaEventQuery").size());
        assertEquals(0x20L, log.calls("cudaEventDestroy").get(0).arg(0));
    }

    @Test
    void streamIsPolledUntilCompleteAndLeftToTheApplication() {
        cudart.answerFor("cudaStreamQuery", 2, Status.CUDA_ERROR_NOT_READY, Status.CUDA_SUCCESS);
        HandleView stream = stream(0x30, cudart);
        Map<HandleView, LeakOutcome> results = run(LONG, stream);

        assertEquals(new LeakOutcome(SYNCHRONIZED, null), results.get(stream));
        assertEquals(3, log.calls("cudaStreamQuery").size());
        assertEquals(List.of("cudaStreamQuery"), log.calls().stream().map(Call::symbol).distinct().toList());
    }

    @Test
    void eventsAndStreamsCompleteBeforeCommunicatorsAreReleasedAndEventsAreDestroyedLast() {
        cudart.answerFor("cudaEventQuery", 5, Status.CUDA_ERROR_NOT_READY, Status.CUDA_SUCCESS);
        cudart.answerFor("cudaStreamQuery", 3, Status.CUDA_ERROR_NOT_READY, Status.CUDA_SUCCESS);
        HandleView comm = comm(0x10, 0, nccl);
        HandleView event = event(0x20, cudart);
        HandleView stream = stream(0x30, cudart);
        Map<HandleView, LeakOutcome> results = run(LONG, comm, event, stream);

        assertEquals(SYNCHRONIZED, results.get(event).outcome());
        assertEquals(SYNCHRONIZED, results.get(stream).outcome());
        assertEquals(DESTROYED, results.get(comm).outcome());
        long lastQuery = Math.max(seqOfLast(log.calls("cudaEventQuery")), seqOfLast(log.calls("cudaStreamQuery")));
        assertTrue(lastQuery < seqOfFirst(log.calls("ncclCommDestroy")), log.calls().toString());
        assertTrue(seqOfFirst(log.calls("ncclCommDestroy")) < seqOfFirst(log.calls("cudaEventDestroy")),
                log.calls().toString());
    }

    @Test
    void failedDestroyFallsBackToAbort() {
        nccl.answer("ncclCommDestroy", 3);
        HandleView comm = comm(0x10, 0, nccl);
        Map<HandleView, LeakOutcome> results = run(LONG, comm);

        assertEquals(new LeakOutcome(ABORTED, "ncclCommDestroy returned 3"), results.get(comm));
        assertEquals(0x10L, log.calls("ncclCommAbort").get(0).arg(0));
    }

    @Test
    void destroyThatHangsIsAbortedWithinTheTimeout() {
        // The emulator's NCCLEMU_HANG=ncclCommDestroy: destroy blocks until the comm is aborted.
        nccl.hang("ncclCommDestroy");
        HandleView comm = comm(0x10, 0, nccl);
        Map<HandleView, LeakOutcome> results = run(SHORT, comm);

        assertEquals(ABORTED, results.get(comm).outcome());
        assertTrue(results.get(comm).note().startsWith("ncclCommDestroy did not return within "),
                results.get(comm).note());
        assertEquals(1, log.calls("ncclCommAbort").size());
    }

    @Test
    void communicatorsOfOneDeviceAreAbortedTogetherInOneGroup() {
        nccl.answer("ncclCommDestroy", 5);
        HandleView a = comm(0xa, 0, nccl);
        HandleView b = comm(0xb, 0, nccl);
        HandleView c = comm(0xc, 1, nccl);
        Map<HandleView, LeakOutcome> results = run(LONG, a, b, c);

        for (HandleView comm : List.of(a, b, c)) {
            assertEquals(ABORTED, results.get(comm).outcome());
        }
        String device0 = log.calls("ncclGroupStart").get(0).thread();
        List<String> onDevice0 = log.calls().stream().filter(call -> call.thread().equals(device0))
                .map(call -> call.symbol() + call.args()).toList();
        assertEquals(List.of("cudaSetDevice[0]", "ncclGroupStart[]", "ncclCommAbort[10]", "ncclCommAbort[11]",
                "ncclGroupEnd[]"), onDevice0);
        Call abortC = log.calls("ncclCommAbort").stream().filter(call -> call.arg(0).equals(0xcL)).findFirst()
                .orElseThrow();
        List<String> onDevice1 = log.calls().stream().filter(call -> call.thread().equals(abortC.thread()))
                .map(call -> call.symbol() + call.args()).toList();
        assertEquals(List.of("cudaSetDevice[1]", "ncclCommAbort[12]"), onDevice1);
        assertEquals(1, log.calls("ncclGroupStart").size());
    }

    @Test
    void communicatorsOfDifferentLibraryInstancesAreNotGroupedTogether() {
        FakeLibrary otherNccl = new FakeLibrary("/opt/nccl/libnccl.so.2", log).answer("ncclCommDestroy", 5);
        nccl.answer("ncclCommDestroy", 5);
        HandleView a = comm(0xa, 0, nccl);
        HandleView b = comm(0xb, 0, otherNccl);
        Map<HandleView, LeakOutcome> results = run(LONG, a, b);

        assertEquals(ABORTED, results.get(a).outcome());
        assertEquals(ABORTED, results.get(b).outcome());
        assertEquals(List.of(), log.calls("ncclGroupStart"));
        assertEquals("/opt/nccl/libnccl.so.2", log.calls("ncclCommAbort").stream()
                .filter(call -> call.arg(0).equals(0xbL)).findFirst().orElseThrow().library());
    }

    @Test
    void abortThatFailsLeavesTheCommunicatorFailedWithBothReasons() {
        nccl.answer("ncclCommDestroy", 3).answer("ncclCommAbort", 6);
        HandleView comm = comm(0x10, 0, nccl);
        Map<HandleView, LeakOutcome> results = run(LONG, comm);

        assertEquals(new LeakOutcome(FAILED, "ncclCommAbort returned 6 (after: ncclCommDestroy returned 3)"),
                results.get(comm));
    }

    @Test
    void groupEndThatFailsFailsEveryCommunicatorOfTheGroup() {
        nccl.answer("ncclCommDestroy", 3).answer("ncclGroupEnd", 2);
        HandleView a = comm(0xa, 0, nccl);
        HandleView b = comm(0xb, 0, nccl);
        Map<HandleView, LeakOutcome> results = run(LONG, a, b);

        for (HandleView comm : List.of(a, b)) {
            assertEquals(FAILED, results.get(comm).outcome());
            assertTrue(results.get(comm).note().startsWith("ncclGroupEnd returned 2"), results.get(comm).note());
        }
    }

    @Test
    void abortThatHangsTimesOutAndCleanupStillReturnsByTheDeadline() {
        nccl.hang("ncclCommDestroy").hang("ncclCommAbort");
        HandleView comm = comm(0x10, 0, nccl);
        Map<HandleView, LeakOutcome> results = run(SHORT, comm);

        assertEquals(TIMED_OUT, results.get(comm).outcome());
        String note = results.get(comm).note();
        assertTrue(note.startsWith("ncclCommAbort did not return within "), note);
        assertTrue(note.contains("(after: ncclCommDestroy did not return within "), note);
    }

    @Test
    void groupEndThatHangsTimesOutItsCommunicators() {
        nccl.answer("ncclCommDestroy", 3).hang("ncclGroupEnd");
        HandleView a = comm(0xa, 0, nccl);
        HandleView b = comm(0xb, 0, nccl);
        Map<HandleView, LeakOutcome> results = run(SHORT, a, b);

        for (HandleView comm : List.of(a, b)) {
            assertEquals(TIMED_OUT, results.get(comm).outcome());
            assertTrue(results.get(comm).note().startsWith("ncclGroupEnd did not return"), results.get(comm).note());
        }
    }

    @Test
    void eventStillPendingAtTheDeadlineIsDestroyedAnyway() {
        cudart.answer("cudaEventQuery", Status.CUDA_ERROR_NOT_READY);
        HandleView event = event(0x20, cudart);
        Map<HandleView, LeakOutcome> results = run(SHORT, event);

        assertEquals(DESTROYED, results.get(event).outcome());
        assertTrue(results.get(event).note().startsWith("still pending after "), results.get(event).note());
        assertEquals(1, log.calls("cudaEventDestroy").size());
    }

    @Test
    void streamStillPendingAtTheDeadlineTimesOut() {
        cudart.answer("cudaStreamQuery", Status.CUDA_ERROR_NOT_READY);
        HandleView stream = stream(0x30, cudart);
        Map<HandleView, LeakOutcome> results = run(SHORT, stream);

        assertEquals(TIMED_OUT, results.get(stream).outcome());
        assertTrue(results.get(stream).note().startsWith("still pending after "), results.get(stream).note());
    }

    @Test
    void queryThatHangsTimesOutLeavesTheEventAloneAndCommunicatorsAreStillReleased() {
        cudart.hang("cudaEventQuery");
        HandleView event = event(0x20, cudart);
        HandleView comm = comm(0x10, 0, nccl);
        Map<HandleView, LeakOutcome> results = run(SHORT, event, comm);

        assertEquals(TIMED_OUT, results.get(event).outcome());
        assertTrue(results.get(event).note().startsWith("cudaEventQuery did not return within "),
                results.get(event).note());
        assertEquals(List.of(), log.calls("cudaEventDestroy"));
        assertEquals(DESTROYED, results.get(comm).outcome());
    }

    @Test
    void queryErrorFailsTheEventWithoutDestroyingIt() {
        cudart.answer("cudaEventQuery", 400);
        HandleView event = event(0x20, cudart);
        Map<HandleView, LeakOutcome> results = run(LONG, event);

        assertEquals(new LeakOutcome(FAILED, "cudaEventQuery returned 400"), results.get(event));
        assertEquals(List.of(), log.calls("cudaEventDestroy"));
    }

    @Test
    void eventDestroyThatFailsIsFailed() {
        cudart.answer("cudaEventDestroy", 709);
        HandleView event = event(0x20, cudart);
        Map<HandleView, LeakOutcome> results = run(LONG, event);

        assertEquals(new LeakOutcome(FAILED, "cudaEventDestroy returned 709"), results.get(event));
    }

    @Test
    void aQueryNoLoadedLibraryCanMakeFailsAsTheAgentsOwn() {
        cudart.answer("cudaEventQuery", args -> {
            throw new NoCudaLibrary();
        });
        HandleView event = event(0x20, cudart);
        Map<HandleView, LeakOutcome> results = run(LONG, event);

        assertEquals(new LeakOutcome(FAILED, "could not query event 0x20: no CUDA runtime or driver loaded"),
                results.get(event));
    }

    @Test
    void aReleaseNoLoadedLibraryCanMakeFailsAsTheAgentsOwn() {
        cudart.answer("cudaEventDestroy", args -> {
            throw new NoCudaLibrary();
        });
        HandleView event = event(0x20, cudart);
        Map<HandleView, LeakOutcome> results = run(LONG, event);

        assertEquals(new LeakOutcome(FAILED, "could not release event 0x20: no CUDA runtime or driver loaded"),
                results.get(event));
    }

    @Test
    void eventDestroyThatHangsTimesOutAndCleanupStillReturns() {
        cudart.hang("cudaEventDestroy");
        HandleView event = event(0x20, cudart);
        Map<HandleView, LeakOutcome> results = run(SHORT, event);

        assertEquals(TIMED_OUT, results.get(event).outcome());
        assertTrue(results.get(event).note().startsWith("cudaEventDestroy did not return within "),
                results.get(event).note());
    }

    @Test
    void symbolsTheLibraryLacksFailTheLeakWithTheReason() {
        nccl.missing("ncclCommDestroy").missing("ncclCommAbort");
        HandleView comm = comm(0x10, 0, nccl);
        Map<HandleView, LeakOutcome> results = run(LONG, comm);

        assertEquals(FAILED, results.get(comm).outcome());
        assertEquals("cannot call ncclCommAbort (after: cannot call ncclCommDestroy: java.lang.UnsatisfiedLinkError:"
                + " Error looking up function 'ncclCommDestroy')", results.get(comm).note());
    }

    @Test
    void nonblockingDestroyInProgressCountsAsDestroyed() {
        nccl.answer("ncclCommDestroy", Status.NCCL_IN_PROGRESS);
        HandleView comm = comm(0x10, 0, nccl);
        Map<HandleView, LeakOutcome> results = run(LONG, comm);

        assertEquals(DESTROYED, results.get(comm).outcome());
        assertEquals(List.of(), log.calls("ncclCommAbort"));
    }

    @Test
    void withoutAKnownCudaRuntimeTheDeviceIsNotSet() {
        HandleView comm = comm(0x10, 0, nccl);
        Map<HandleView, LeakOutcome> results = assertTimeoutPreemptively(RETURNS_WITHIN,
                () -> Cleanup.run(List.of(comm), LONG));

        assertEquals(DESTROYED, results.get(comm).outcome());
        assertEquals(List.of("ncclCommDestroy"), log.calls().stream().map(Call::symbol).toList());
    }

    @Test
    void theCudaRuntimeForSetDeviceIsTakenFromALeakedEventOrStream() {
        HandleView comm = comm(0x10, 2, nccl);
        HandleView stream = stream(0x30, cudart);
        assertTimeoutPreemptively(RETURNS_WITHIN, () -> Cleanup.run(List.of(comm, stream), LONG));

        assertEquals("libcudart.so.13", log.calls("cudaSetDevice").get(0).library());
        assertEquals(2, log.calls("cudaSetDevice").get(0).arg(0));
    }

    @Test
    void zeroTimeoutNeverAbortsADestroyThatMayStillFinish() {
        nccl.hang("ncclCommDestroy");
        HandleView comm = comm(0x10, 0, nccl);
        Map<HandleView, LeakOutcome> results = run(Duration.ZERO, comm);

        assertEquals(TIMED_OUT, results.get(comm).outcome());
        assertTrue(results.get(comm).note().endsWith("; no time left to abort"), results.get(comm).note());
        assertEquals(List.of(), log.calls("ncclCommAbort"));
    }

    @Test
    void leakWithoutALibraryInstanceFails() {
        HandleView comm = comm(0x10, 0, null);
        HandleView event = event(0x20, null);
        Map<HandleView, LeakOutcome> results = run(LONG, comm, event);

        assertEquals(FAILED, results.get(comm).outcome());
        assertEquals(FAILED, results.get(event).outcome());
        assertEquals(List.of(), log.calls());
    }

    @Test
    void resultsFollowTheOrderOfTheLeaks() {
        List<HandleView> leaks = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            leaks.add(i % 2 == 0 ? comm(0x100 + i, 0, nccl) : event(0x100 + i, cudart));
        }
        Map<HandleView, LeakOutcome> results = assertTimeoutPreemptively(RETURNS_WITHIN,
                () -> Cleanup.run(leaks, LONG, new CudaRuntime(cudart)));

        assertEquals(leaks, List.copyOf(results.keySet()));
    }

    @Test
    void noLeaksMeansNoCalls() {
        assertEquals(Map.of(), run(LONG));
        assertEquals(List.of(), log.calls());
    }

    @Test
    void noteIsAbsentWhenTheOutcomeIsPlain() {
        HandleView event = event(0x20, cudart);
        assertNull(run(LONG, event).get(event).note());
    }

    /** A claim as the tracker hands it out: taken once, or refused when the application released. */
    private static final class Claim implements ReleaseClaim {
        final AtomicInteger claims = new AtomicInteger();
        final boolean applicationHasIt;
        /** The application's release of it has been entered and not returned. */
        volatile boolean releasing;

        Claim(boolean applicationHasIt) {
            this.applicationHasIt = applicationHasIt;
        }

        @Override
        public boolean claimForCleanup() {
            claims.incrementAndGet();
            return !applicationHasIt;
        }

        @Override
        public boolean claimedForCleanup() {
            return !applicationHasIt && claims.get() > 0;
        }

        @Override
        public boolean applicationReleasing() {
            return releasing;
        }
    }

    private static HandleView withClaim(HandleView v, ReleaseClaim claim) {
        return new HandleView(v.kind(), v.handle(), v.api(), v.bridge(), v.thread(), v.createdAtMillis(),
                v.creation(), v.device(), v.details(), v.access(), claim);
    }

    @Test
    void communicatorTheApplicationIsReleasingIsLeftAlone() {
        HandleView mine = withClaim(comm(0x10, 0, nccl), new Claim(true));
        HandleView leaked = withClaim(comm(0x20, 0, nccl), new Claim(false));
        Map<HandleView, LeakOutcome> results = run(LONG, mine, leaked);

        assertEquals(new LeakOutcome(NONE, "released by the application while the JVM exited"), results.get(mine));
        assertEquals(DESTROYED, results.get(leaked).outcome());
        assertEquals(List.of(0x20L), log.calls().stream().filter(c -> c.symbol().startsWith("ncclComm"))
                .map(c -> c.arg(0)).toList());
    }

    @Test
    void eventTheApplicationIsDestroyingIsNeitherQueriedNorDestroyed() {
        HandleView mine = withClaim(event(0x30, cudart), new Claim(true));
        Map<HandleView, LeakOutcome> results = run(LONG, mine);

        assertEquals(NONE, results.get(mine).outcome());
        assertEquals(List.of(), log.calls().stream().filter(c -> c.symbol().startsWith("cudaEvent")).toList());
    }

    @Test
    void everyHandleIsClaimedOnceBeforeItsFirstCall() {
        Claim commClaim = new Claim(false);
        Claim eventClaim = new Claim(false);
        nccl.answer("ncclCommDestroy", 5); // and then aborted: still one claim
        HandleView comm = withClaim(comm(0x10, 0, nccl), commClaim);
        HandleView event = withClaim(event(0x20, cudart), eventClaim);
        run(LONG, comm, event);

        assertEquals(1, commClaim.claims.get());
        assertEquals(1, eventClaim.claims.get());
        assertEquals(1, log.calls("ncclCommAbort").size());
    }

    @Test
    void aNativeCallStillRunningAtTheEndIsLeftHanging() {
        nccl.hang("ncclCommDestroy").hang("ncclCommAbort");
        CleanupRun hanging = assertTimeoutPreemptively(RETURNS_WITHIN,
                () -> Cleanup.execute(List.of(comm(0x10, 0, nccl)), SHORT, new CudaRuntime(cudart)));
        assertTrue(hanging.leftHanging());
    }

    @Test
    void aDestroyReleasedByTheAbortIsNotLeftHanging() {
        // NCCLEMU_HANG=ncclCommDestroy: the destroy returns once the comm is aborted
        java.util.concurrent.CountDownLatch aborted = new java.util.concurrent.CountDownLatch(1);
        nccl.answer("ncclCommDestroy", args -> {
            try {
                aborted.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return 6;
        }).answer("ncclCommAbort", args -> {
            aborted.countDown();
            return 0;
        });
        CleanupRun run = assertTimeoutPreemptively(RETURNS_WITHIN,
                () -> Cleanup.execute(List.of(comm(0x10, 0, nccl)), SHORT, new CudaRuntime(cudart)));
        assertEquals(ABORTED, run.outcomes().values().iterator().next().outcome());
        assertFalse(run.leftHanging());
    }

    private static Claim releasing() {
        Claim claim = new Claim(true);
        claim.releasing = true;
        return claim;
    }

    @Test
    void communicatorWhoseApplicationDestroyDoesNotReturnIsAbortedNeverReportedReleased() {
        HandleView mine = withClaim(comm(0x10, 0, nccl), releasing());
        Map<HandleView, LeakOutcome> results = run(SHORT, mine);

        assertEquals(ABORTED, results.get(mine).outcome());
        assertTrue(results.get(mine).note().startsWith("the application's own release (ncclCommDestroy) had not returned after "),
                results.get(mine).note());
        assertEquals(List.of(0x10L), log.calls("ncclCommAbort").stream().map(c -> c.arg(0)).toList());
        assertEquals(List.of(), log.calls("ncclCommDestroy"));
    }

    @Test
    void communicatorWhoseApplicationDestroyReturnsDuringCleanupIsLeftAlone() {
        Claim claim = releasing();
        HandleView mine = withClaim(comm(0x10, 0, nccl), claim);
        Thread application = new Thread(() -> {
            try {
                Thread.sleep(100);
            } catch (InterruptedException e) {
                return;
            }
            claim.releasing = false;
        });
        application.start();
        Map<HandleView, LeakOutcome> results = run(LONG, mine);

        assertEquals(new LeakOutcome(NONE, "released by the application while the JVM exited"), results.get(mine));
        assertEquals(List.of(), log.calls().stream().filter(c -> c.symbol().startsWith("ncclComm")).toList());
    }

    @Test
    void eventWhoseApplicationDestroyDoesNotReturnTimesOutNeverReportedReleased() {
        HandleView mine = withClaim(event(0x30, cudart), releasing());
        Map<HandleView, LeakOutcome> results = run(SHORT, mine);

        assertEquals(TIMED_OUT, results.get(mine).outcome());
        assertTrue(results.get(mine).note().startsWith("the application's own cudaEventDestroy had not returned after "),
                results.get(mine).note());
        assertEquals(List.of(), log.calls().stream().filter(c -> c.symbol().startsWith("cudaEvent")).toList());
    }

    @Test
    void eventsNotReachedByTheDeadlineAreNotLeftHanging() {
        // every destroy returns, slowly: the deadline passes between two calls, not inside one
        cudart.answer("cudaEventDestroy", args -> {
            java.util.concurrent.locks.LockSupport.parkNanos(2_000_000);
            return 0;
        });
        List<HandleView> events = new ArrayList<>();
        for (int i = 0; i < 1000; i++) {
            events.add(event(0x1000 + i, cudart));
        }
        CleanupRun run = assertTimeoutPreemptively(RETURNS_WITHIN,
                () -> Cleanup.execute(events, Duration.ofMillis(300), new CudaRuntime(cudart)));
        assertFalse(run.leftHanging());
        assertTrue(run.outcomes().values().stream().anyMatch(o -> "not destroyed before the deadline (its work had completed)".equals(o.note())),
                run.outcomes().values().toString());
        assertTrue(log.calls("cudaEventDestroy").size() < events.size(), "destroys went on past the deadline");
    }

    private static HandleView eventOn(long handle, long stream, NativeAccess access) {
        return new HandleView(Kind.EVENT, handle, "cudaEventCreate", "jna-interface", "main", 0L, null,
                0, Map.of("device", 0), access, ReleaseClaim.UNTRACKED, stream);
    }

    private static List<HandleView> eventsOn(long stream, int n, NativeAccess access) {
        List<HandleView> events = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            events.add(eventOn(0x1000 + i, stream, access));
        }
        return events;
    }

    @Test
    void eventsRecordedOnAnIdleStreamAreCompleteByOneStreamQuery() {
        List<HandleView> events = eventsOn(0x99, 1000, cudart);
        CleanupRun run = assertTimeoutPreemptively(RETURNS_WITHIN,
                () -> Cleanup.execute(events, LONG, new CudaRuntime(cudart)));

        assertTrue(run.outcomes().values().stream().allMatch(o -> o.outcome() == SYNCHRONIZED), run.outcomes().toString());
        assertEquals(List.of(0x99L), log.calls("cudaStreamQuery").stream().map(c -> c.arg(0)).toList());
        assertEquals(List.of(), log.calls("cudaEventQuery"));
    }

    @Test
    void eventsRecordedOnABusyStreamAreQueriedOneByOne() {
        cudart.answer("cudaStreamQuery", Status.CUDA_ERROR_NOT_READY);
        List<HandleView> events = eventsOn(0x99, 3, cudart);
        CleanupRun run = assertTimeoutPreemptively(RETURNS_WITHIN,
                () -> Cleanup.execute(events, LONG, new CudaRuntime(cudart)));

        assertTrue(run.outcomes().values().stream().allMatch(o -> o.outcome() == SYNCHRONIZED), run.outcomes().toString());
        assertEquals(3, log.calls("cudaEventQuery").size());
    }

    @Test
    void eventsNotQueriedBeforeTheDeadlineAreNeverCalledPending() {
        // each query answers "complete", slowly: most events are never asked before the deadline
        cudart.answer("cudaEventQuery", args -> {
            java.util.concurrent.locks.LockSupport.parkNanos(5_000_000);
            return 0;
        });
        List<HandleView> events = new ArrayList<>();
        for (int i = 0; i < 500; i++) {
            events.add(event(0x1000 + i, cudart));
        }
        CleanupRun run = assertTimeoutPreemptively(RETURNS_WITHIN,
                () -> Cleanup.execute(events, Duration.ofMillis(400), new CudaRuntime(cudart)));

        assertTrue(run.outcomes().values().stream().anyMatch(o -> o.note() != null && o.note().contains("not queried before the deadline")),
                run.outcomes().values().toString());
        assertTrue(run.outcomes().values().stream().noneMatch(o -> o.note() != null && o.note().contains("still pending")),
                run.outcomes().values().toString());
    }

    @Test
    void aQueryThatReturnsJustAfterPollingStopsIsNotCalledHung() {
        // the second query is still inside the library when polling stops (half of 1 s), and
        // returns 20 ms later: slow, not hung
        long stopsAt = System.nanoTime() + (long) (1_000_000_000L * Cleanup.SYNC_SHARE);
        AtomicInteger queries = new AtomicInteger();
        cudart.answer("cudaEventQuery", args -> {
            if (queries.incrementAndGet() == 2) {
                java.util.concurrent.locks.LockSupport.parkNanos(stopsAt + 20_000_000 - System.nanoTime());
            }
            return Status.CUDA_ERROR_NOT_READY;
        });
        HandleView event = event(0x20, cudart);
        Map<HandleView, LeakOutcome> results = run(Duration.ofSeconds(1), event);

        assertEquals(DESTROYED, results.get(event).outcome(), results.get(event).toString());
        assertTrue(results.get(event).note().startsWith("still pending after "), results.get(event).note());
    }
}
