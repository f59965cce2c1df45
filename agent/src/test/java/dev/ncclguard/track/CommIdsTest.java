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

    /** The values of a program built from NCCL's own bitops.h (the emulator's test_nccl_profiler.c has them too). */
    @Test
    void anInitsCommIdIsNcclsGetHashOfTheUniqueId() {
        byte[] id = new byte[128];
        for (int i = 0; i < id.length; i++) {
            id[i] = (byte) i;
        }
        assertEquals(0x6afe1cc17717e1f4L, CommIds.ofUniqueId(id));
    }

    @Test
    void aSplitsCommIdHashesTheParentsTheSplitCountAndTheColor() {
        assertEquals(0x79030d073b3c579fL, CommIds.ofSplit(0x6afe1cc17717e1f4L, 0, 1));
    }

    @Test
    void aShrinksCommIdIsASplitsWithCountAndColorZero() {
        assertEquals(0x3ab8d78e8fb6dbdaL, CommIds.ofShrink(0x6afe1cc17717e1f4L));
    }

    /** Measured on NCCL 2.28.3 (an H200): the first split, color 0, of two parents (docs/emulator.md). */
    @Test
    void splitsOfRealNcclHaveTheCommIdsNcclGaveItsPlugin() {
        assertEquals(0x1b640a33d9edf41fL, CommIds.ofSplit(0xdcfaa36e8534502L, 0, 1));
        assertEquals(0xa36e470c46669af0L, CommIds.ofSplit(0x5720d6e6ef45e93eL, 0, 1));
    }

    /** src/misc/utils.cc hashCombine, the grow's hash, as the emulator's C test has it. */
    @Test
    void growsHashCombineIsNcclsOwn() {
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
