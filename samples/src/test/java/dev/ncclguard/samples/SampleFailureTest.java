package dev.ncclguard.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

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
}
