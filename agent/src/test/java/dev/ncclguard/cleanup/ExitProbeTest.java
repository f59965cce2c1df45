package dev.ncclguard.cleanup;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ncclguard.catalog.Kind;
import dev.ncclguard.catalog.Status;
import dev.ncclguard.track.HandleView;
import dev.ncclguard.track.NativeAccess;
import dev.ncclguard.track.ReleaseClaim;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class ExitProbeTest {
    private static final long STREAM = 0x5000;
    /** Far beyond what the fakes take: only a probe that blocks would reach it. */
    private static final long DEADLINE_NANOS = TimeUnit.SECONDS.toNanos(30);
    /** Long enough that a busy machine still starts the prober and its first call before it. */
    private static final long SHORT_NANOS = TimeUnit.MILLISECONDS.toNanos(1500);

    private final FakeLibrary.CallLog log = new FakeLibrary.CallLog();
    private final FakeLibrary cudart = new FakeLibrary("libcudart.so.13", log);

    private static HandleView event(long handle, long recordedOn, NativeAccess access) {
        return new HandleView(Kind.EVENT, handle, "cudaEventCreate", "jna-interface", "main", 0L, null, 0,
                Map.of("stream", "0x" + Long.toHexString(STREAM), "device", 0), access, ReleaseClaim.UNTRACKED,
                recordedOn);
    }

    private static HandleView stream(long handle, NativeAccess access) {
        return new HandleView(Kind.STREAM, handle, "cudaStreamCreate", "jna-interface", "main", 0L, null, 0,
                Map.of("pendingOps", 3L, "device", 0), access);
    }

    private static List<HandleView> events(int n, long recordedOn, NativeAccess access) {
        List<HandleView> events = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            events.add(event(0xE000 + i, recordedOn, access));
        }
        return events;
    }

    private ExitProbe.Result probe(List<HandleView> leaks) {
        return ExitProbe.probe(leaks, System.nanoTime() + DEADLINE_NANOS);
    }

    @Test
    void eventsRecordedOnAnIdleStreamAreAnsweredByOneQueryOfIt() {
        List<HandleView> events = events(1_000, STREAM, cudart);

        ExitProbe.Result result = probe(events);

        assertEquals(List.of(STREAM), log.calls("cudaStreamQuery").stream().map(c -> c.arg(0)).toList());
        assertTrue(log.calls("cudaEventQuery").isEmpty());
        Map<HandleView, Boolean> expected = new HashMap<>();
        events.forEach(e -> expected.put(e, false));
        assertEquals(expected, result.stillPending());
        assertFalse(result.leftHanging());
    }

    @Test
    void eventsOfAStreamStillBusyAreAskedOneByOne() {
        cudart.answer("cudaStreamQuery", Status.CUDA_ERROR_NOT_READY);
        cudart.answer("cudaEventQuery", args -> (Long) args[0] % 2 == 0 ? Status.CUDA_ERROR_NOT_READY : Status.CUDA_SUCCESS);
        List<HandleView> events = events(10, STREAM, cudart);

        Map<HandleView, Boolean> answers = probe(events).stillPending();

        assertEquals(1, log.calls("cudaStreamQuery").size());
        assertEquals(10, log.calls("cudaEventQuery").size());
        for (HandleView e : events) {
            assertEquals(e.handle() % 2 == 0, answers.get(e), e.hexHandle());
        }
    }

    @Test
    void eventsWithoutALiveOrdinaryStreamAreAskedOneByOne() {
        List<HandleView> events = events(3, 0, cudart);

        Map<HandleView, Boolean> answers = probe(events).stillPending();

        assertTrue(log.calls("cudaStreamQuery").isEmpty());
        assertEquals(List.of(0xE000L, 0xE001L, 0xE002L), log.calls("cudaEventQuery").stream().map(c -> c.arg(0)).toList());
        events.forEach(e -> assertEquals(false, answers.get(e)));
    }

    @Test
    void aStreamLeakIsAskedItself() {
        cudart.answer("cudaStreamQuery", Status.CUDA_ERROR_NOT_READY);
        HandleView stream = stream(STREAM, cudart);

        assertEquals(Map.of(stream, true), probe(List.of(stream)).stillPending());
        assertEquals(List.of(STREAM), log.calls("cudaStreamQuery").stream().map(c -> c.arg(0)).toList());
    }

    @Test
    void anErrorOrAFailedCallLeavesTheAnswerUnknown() {
        cudart.answer("cudaStreamQuery", 700);
        cudart.answer("cudaEventQuery", args -> {
            if ((Long) args[0] == 0xE000) {
                throw new IllegalStateException("cannot call cudaEventQuery");
            }
            return 700;
        });
        List<HandleView> events = events(2, STREAM, cudart);

        Map<HandleView, Boolean> answers = probe(events).stillPending();

        assertNull(answers.get(events.get(0)));
        assertNull(answers.get(events.get(1)));
        assertTrue(answers.isEmpty());
    }

    @Test
    void aQueryThatNeverReturnsIsLeftHangingAndTheRestUnknown() {
        cudart.hang("cudaEventQuery");
        List<HandleView> events = events(2, 0, cudart);

        ExitProbe.Result result = ExitProbe.probe(events, System.nanoTime() + SHORT_NANOS);
        log.releaseHangs();

        assertTrue(result.leftHanging());
        assertTrue(result.stillPending().isEmpty());
    }

    @Test
    void aProbePastItsDeadlineAsksNothing() {
        List<HandleView> events = events(3, STREAM, cudart);

        ExitProbe.Result result = ExitProbe.probe(events, System.nanoTime() - 1);

        assertTrue(result.stillPending().isEmpty());
        assertFalse(result.leftHanging());
        assertTrue(log.calls().isEmpty());
    }
}
