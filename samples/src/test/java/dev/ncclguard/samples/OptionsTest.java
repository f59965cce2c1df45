package dev.ncclguard.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class OptionsTest {
    @Test
    void defaultsAreTwoRanksFiveIterationsAndOneKibiFloat() {
        assertEquals(new Options("clean", 2, 5, 1024, false, false), Options.parse(new String[] {"clean"}));
    }

    @Test
    void knobsMayComeBeforeOrAfterTheScenario() {
        assertEquals(new Options("pending", 4, 7, 64, true, false),
                Options.parse(new String[] {"--ranks", "4", "pending", "--iters", "7", "--count", "64", "--init", "all"}));
    }

    @Test
    void aNonPositiveOrNonNumericValueIsRejectedWithItsOption() {
        assertEquals("--ranks 0: expected a positive integer",
                assertThrows(IllegalArgumentException.class, () -> Options.parse(new String[] {"clean", "--ranks", "0"})).getMessage());
        assertEquals("--count lots: expected a positive integer",
                assertThrows(IllegalArgumentException.class, () -> Options.parse(new String[] {"clean", "--count", "lots"})).getMessage());
    }

    @Test
    void anOptionWithoutItsValueIsRejected() {
        assertEquals("--iters needs a value",
                assertThrows(IllegalArgumentException.class, () -> Options.parse(new String[] {"clean", "--iters"})).getMessage());
    }

    @Test
    void anUnknownScenarioOrASecondOneIsRejected() {
        assertEquals("unknown scenario 'leaking'",
                assertThrows(IllegalArgumentException.class, () -> Options.parse(new String[] {"leaking"})).getMessage());
        assertEquals("unexpected argument 'leaky'",
                assertThrows(IllegalArgumentException.class, () -> Options.parse(new String[] {"clean", "leaky"})).getMessage());
    }

    @Test
    void helpWinsOverEverythingElse() {
        assertTrue(Options.parse(new String[] {"clean", "--help"}).help());
    }
}
