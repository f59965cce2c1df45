package dev.ncclguard.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class SampleFailureTest {
    @Test
    void aFailedStatusIsNamedWithTheLibrarysTextAndItsNumber() {
        SampleFailure e = assertThrows(SampleFailure.class,
                () -> SampleFailure.check(5, "ncclAllReduce", status -> "invalid usage #" + status));
        assertEquals("ncclAllReduce failed: invalid usage #5 (5)", e.getMessage());
    }

    @Test
    void successAsksTheLibraryForNoText() {
        AtomicInteger asked = new AtomicInteger();
        SampleFailure.check(0, "cudaSetDevice", status -> "text " + asked.incrementAndGet());
        assertEquals(0, asked.get());
    }

    @Test
    void aQueryNotReadyIsNotDoneAndNoFailure() {
        assertFalse(SampleFailure.done(600, "cudaEventQuery", status -> "device not ready"));
        assertTrue(SampleFailure.done(0, "cudaEventQuery", status -> "no error"));
    }

    @Test
    void aQueryThatFailsOtherwiseFailsItsCall() {
        SampleFailure e = assertThrows(SampleFailure.class,
                () -> SampleFailure.done(400, "cudaEventQuery", status -> "invalid resource handle"));
        assertEquals("cudaEventQuery failed: invalid resource handle (400)", e.getMessage());
    }
}
