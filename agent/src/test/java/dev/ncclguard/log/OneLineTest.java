package dev.ncclguard.log;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import org.junit.jupiter.api.Test;

class OneLineTest {
    @Test
    void lineFeedCarriageReturnAndTabAreShownByTheirShortEscapes() {
        assertEquals("a\\nb\\rc\\td", OneLine.of("a\nb\rc\td"));
    }

    @Test
    void everyOtherC0ControlIsShownAsAUnicodeEscape() {
        for (char c = 0; c < 0x20; c++) {
            if (c == '\n' || c == '\r' || c == '\t') {
                continue;
            }
            assertEquals(String.format("x\\u%04xy", (int) c), OneLine.of("x" + c + "y"), "char " + (int) c);
        }
    }

    @Test
    void deleteC1ControlsAndTheUnicodeLineSeparatorsAreEscaped() {
        assertEquals("\\u007f", OneLine.of("\u007f"));
        for (char c = 0x80; c <= 0x9f; c++) {
            assertEquals(String.format("\\u%04x", (int) c), OneLine.of(String.valueOf(c)), "char " + (int) c);
        }
        assertEquals("a\\u2028b\\u2029c", OneLine.of("a\u2028b\u2029c"));
    }

    @Test
    void printableTextIsReturnedAsItIs() {
        String text = "pkg.Cls.m(Cls.java:42) \u00e9\u00a0\u4e2d \ud83d\ude00";
        assertSame(text, OneLine.of(text));
    }

    @Test
    void nullIsAQuestionMark() {
        assertEquals("?", OneLine.of(null));
    }
}
