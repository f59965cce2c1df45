package dev.ncclguard.track;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class CommIdsTest {
    @Test
    void hexIsSixteenLowerCaseDigitsZeroPadded() {
        assertEquals("0000000000000000", CommIds.hex(0L));
        assertEquals("000000000000abcd", CommIds.hex(0xabcdL));
        assertEquals("0fedcba987654321", CommIds.hex(0x0fedcba987654321L));
        assertEquals("fedcba9876543210", CommIds.hex(0xfedcba9876543210L));
        assertEquals("ffffffffffffffff", CommIds.hex(-1L));
    }
}
