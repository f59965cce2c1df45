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

    /** The values a program built from NCCL's own bitops.h (v2.29.3-1) prints, as the emulator's C test has them. */
    @Test
    void ncclHashesAreNcclsOwn() {
        byte[] id = new byte[128];
        for (int i = 0; i < id.length; i++) {
            id[i] = (byte) i;
        }
        long h = CommIds.ncclInitHash(id);
        assertEquals(0x6afe1cc17717e1f4L, h);
        assertEquals(0x79030d073b3c579fL, CommIds.ncclSplitHash(h, 1, 0));
        assertEquals(0x3ab8d78e8fb6dbdaL, CommIds.ncclSplitHash(h, 0, 0));
        assertEquals(0x8e136f84506edd7bL, CommIds.ncclHashCombine(0x1122334455667788L, 5));
    }

    @Test
    void ncclMagicIsTheUniqueIdsFirstEightBytesLittleEndian() {
        byte[] id = new byte[128];
        for (int i = 0; i < 8; i++) {
            id[i] = (byte) (i + 1);
        }
        assertEquals(0x0807060504030201L, CommIds.ncclMagic(id));
    }
}
