package consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** A test that touches no GPU: run alone by the own-argline profile. */
class NoGpuTest {
    @Test
    void arithmetic() {
        assertEquals(4, 2 + 2);
    }
}
