package dev.ncclguard.cleanup;

import static dev.ncclguard.cleanup.Outcome.DESTROYED;
import static dev.ncclguard.cleanup.Outcome.FAILED;
import static dev.ncclguard.cleanup.Outcome.FREED;
import static dev.ncclguard.cleanup.Outcome.TIMED_OUT;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ncclguard.catalog.Kind;
import dev.ncclguard.cleanup.FakeLibrary.Call;
import dev.ncclguard.track.DevCommStruct;
import dev.ncclguard.track.HandleView;
import dev.ncclguard.track.NativeAccess;
import dev.ncclguard.track.ReleaseClaim;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Cleanup of device communicators (before their communicator) and ncclMemAlloc memory (after every communicator). */
class ResourceCleanupTest {
    private static final Duration RETURNS_WITHIN = Duration.ofSeconds(30);
    private static final Duration LONG = Duration.ofSeconds(20);

    private final FakeLibrary.CallLog log = new FakeLibrary.CallLog();
    private final FakeLibrary nccl = new FakeLibrary("libnccl.so.2", log);
    private final FakeLibrary cudart = new FakeLibrary("libcudart.so.13", log);

    @AfterEach
    void releaseHungThreads() {
        log.releaseHangs();
    }

    private static HandleView comm(long handle, NativeAccess access) {
        return new HandleView(Kind.COMM, handle, "ncclCommInitRank", "jni", "main", 0L, null, 0,
                Map.of("rank", 0, "nranks", 2, "device", 0), access);
    }

    private static HandleView devComm(long window, long comm, byte[] struct, NativeAccess access) {
        return new HandleView(Kind.DEVCOMM, window, "ncclDevCommCreate", "jni", "main", 1L, null, 0,
                Map.of("comm", "0x" + Long.toHexString(comm)), access, ReleaseClaim.UNTRACKED, 0,
                new DevCommStruct(comm, struct));
    }

    private static HandleView memory(long ptr, NativeAccess access) {
        return new HandleView(Kind.MEMORY, ptr, "ncclMemAlloc", "jni", "main", 2L, null, 0,
                Map.of("bytes", 4096L, "device", 0), access);
    }

    private Map<HandleView, LeakOutcome> run(Duration timeout, HandleView... leaks) {
        return assertTimeoutPreemptively(RETURNS_WITHIN,
                () -> Cleanup.run(List.of(leaks), timeout, new CudaRuntime(cudart)));
    }

    private List<String> ncclCalls() {
        return log.calls().stream().map(Call::symbol).filter(s -> s.startsWith("nccl")).toList();
    }

    @Test
    void deviceCommunicatorIsDestroyedBeforeItsCommunicatorWithACopyOfItsStruct() {
        byte[] struct = new byte[200];
        struct[32] = 0x20;
        HandleView comm = comm(0x10, nccl);
        HandleView dev = devComm(0x20, 0x10, struct, nccl);
        Map<HandleView, LeakOutcome> results = run(LONG, comm, dev);

        assertEquals(new LeakOutcome(DESTROYED, null), results.get(dev));
        assertEquals(new LeakOutcome(DESTROYED, null), results.get(comm));
        assertEquals(List.of("ncclDevCommDestroy", "ncclCommDestroy"), ncclCalls());
        Call destroy = log.calls("ncclDevCommDestroy").get(0);
        assertEquals(0x10L, destroy.arg(0));
        assertArrayEquals(struct, (byte[]) destroy.arg(1));
    }

    @Test
    void deviceCommunicatorWhoseStructWasNotReadIsLeftToItsCommunicator() {
        HandleView dev = devComm(0x20, 0x10, null, nccl);
        LeakOutcome outcome = run(LONG, dev).get(dev);
        assertEquals(FAILED, outcome.outcome());
        assertTrue(outcome.note().contains("NCCL frees it with its communicator"), outcome.note());
        assertEquals(List.of(), ncclCalls());
    }

    @Test
    void failingDeviceCommunicatorDestroySaysWhatItReturned() {
        nccl.answer("ncclDevCommDestroy", 5);
        HandleView dev = devComm(0x20, 0x10, new byte[200], nccl);
        assertEquals(new LeakOutcome(FAILED, "ncclDevCommDestroy returned 5"), run(LONG, dev).get(dev));
    }

    @Test
    void memoryIsFreedAfterTheCommunicators() {
        HandleView comm = comm(0x10, nccl);
        HandleView mem = memory(0x5000, nccl);
        Map<HandleView, LeakOutcome> results = run(LONG, mem, comm);

        assertEquals(new LeakOutcome(FREED, null), results.get(mem));
        assertEquals(List.of("ncclCommDestroy", "ncclMemFree"), ncclCalls());
        assertEquals(0x5000L, log.calls("ncclMemFree").get(0).arg(0));
    }

    @Test
    void memoryIsNotFreedWhileACommunicatorThatMayUseItWasNotReleased() {
        nccl.answer("ncclCommDestroy", 5).answer("ncclCommAbort", 5);
        HandleView comm = comm(0x10, nccl);
        HandleView mem = memory(0x5000, nccl);
        LeakOutcome outcome = run(LONG, comm, mem).get(mem);

        assertEquals(FAILED, outcome.outcome());
        assertTrue(outcome.note().startsWith("not freed: communicator 0x10 was not released by cleanup (failed)"),
                outcome.note());
        assertEquals(List.of(), log.calls("ncclMemFree"));
    }

    @Test
    void aFreeThatNeverReturnsTimesOutWithinTheDeadline() {
        nccl.answer("ncclMemFree", args -> log.hang());
        HandleView mem = memory(0x5000, nccl);
        LeakOutcome outcome = run(Duration.ofMillis(1500), mem).get(mem);
        assertEquals(TIMED_OUT, outcome.outcome());
        assertTrue(outcome.note().startsWith("ncclMemFree did not return within"), outcome.note());
    }

    // The device communicators and the memory are released by one implementation
    // (SerialReleases.oneByOne): what it takes from each kind is pinned below.

    @Test
    void deviceCommunicatorsBehindADestroyThatHangsGiveUpAtTheirShareOfTheTimeout() {
        nccl.hang("ncclDevCommDestroy");
        HandleView comm = comm(0x10, nccl);
        HandleView hung = devComm(0x20, 0x10, new byte[200], nccl);
        HandleView next = devComm(0x30, 0x10, new byte[200], nccl);
        Map<HandleView, LeakOutcome> results = run(Duration.ofSeconds(2), comm, hung, next);

        LeakOutcome outcome = results.get(hung);
        assertEquals(TIMED_OUT, outcome.outcome());
        // its share is a tenth of the timeout (200 ms); the whole deadline would be 2000
        long waited = millisIn(outcome.note(), "ncclDevCommDestroy did not return within ");
        assertTrue(waited < 1000, outcome.note());
        assertEquals(new LeakOutcome(TIMED_OUT,
                "not destroyed before its share of the deadline; NCCL frees it with its communicator"), results.get(next));
        assertEquals(new LeakOutcome(DESTROYED, null), results.get(comm));
    }

    @Test
    void memoryBehindAFreeThatHangsIsNotFreedBeforeTheDeadline() {
        nccl.hang("ncclMemFree");
        HandleView hung = memory(0x5000, nccl);
        HandleView next = memory(0x6000, nccl);
        Map<HandleView, LeakOutcome> results = run(Duration.ofMillis(1500), hung, next);

        LeakOutcome outcome = results.get(hung);
        assertEquals(TIMED_OUT, outcome.outcome());
        // memory may take until the deadline, not a share of it
        long waited = millisIn(outcome.note(), "ncclMemFree did not return within ");
        assertTrue(waited >= 1000, outcome.note());
        assertEquals(new LeakOutcome(TIMED_OUT, "not freed before the deadline"), results.get(next));
    }

    @Test
    void releasesThatCannotBeCalledSayWhyInTheirOwnFunctionsName() {
        nccl.missing("ncclDevCommDestroy").missing("ncclMemFree");
        HandleView dev = devComm(0x20, 0x10, new byte[200], nccl);
        HandleView mem = memory(0x5000, nccl);
        Map<HandleView, LeakOutcome> results = run(LONG, dev, mem);

        assertEquals(new LeakOutcome(FAILED, "cannot call ncclDevCommDestroy: java.lang.UnsatisfiedLinkError:"
                + " Error looking up function 'ncclDevCommDestroy'"), results.get(dev));
        assertEquals(new LeakOutcome(FAILED, "cannot call ncclMemFree: java.lang.UnsatisfiedLinkError:"
                + " Error looking up function 'ncclMemFree'"), results.get(mem));
    }

    @Test
    void aFailingFreeSaysWhatItReturned() {
        nccl.answer("ncclMemFree", 5);
        HandleView mem = memory(0x5000, nccl);
        assertEquals(new LeakOutcome(FAILED, "ncclMemFree returned 5"), run(LONG, mem).get(mem));
    }

    /** The milliseconds in "{@code prefix}N ms". */
    private static long millisIn(String note, String prefix) {
        assertTrue(note.startsWith(prefix), note);
        return Long.parseLong(note.substring(prefix.length(), note.indexOf(" ms", prefix.length())));
    }
}
