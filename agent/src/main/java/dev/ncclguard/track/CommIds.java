package dev.ncclguard.track;

import java.util.concurrent.ThreadLocalRandom;

/**
 * NCCL's own identity of a communicator, its commHash: what NCCL prints as {@code commId 0x…} in
 * its {@code Init COMPLETE} INFO lines, hands its profiler plugin and RAS, and every rank of the
 * communicator computes alike, so that reports of several ranks can be joined and a reported
 * communicator found in NCCL's logs. Computed as NVIDIA/nccl's src/init.cc does (v2.28.3-1 and
 * v2.29.3-1 alike), with getHash, eatHash and digestHash of its src/include/bitops.h: of the
 * unique id for the init calls, of the parent's commHash, its split count and the color for a
 * split, with count and color 0 for a shrink. Written as 16 hex digits.
 */
final class CommIds {
    private CommIds() {
    }

    /** getHash(uniqueId.internal, NCCL_UNIQUE_ID_BYTES): the commHash of ncclCommInitRank and its variants. */
    static long ofUniqueId(byte[] uniqueId) {
        long[] acc = {1, 1};
        eat(acc, uniqueId, uniqueId.length);
        return digest(acc);
    }

    /**
     * A split's: eatHash of the parent's commHash (8 bytes), of the parent's split count with this
     * split (an int: NCCL's childCount, counted on every rank, a rank that gets no child too), and
     * of the color (an int), then digestHash. The key is left out, as NCCL leaves it out.
     */
    static long ofSplit(long parentCommId, int color, int nthSplit) {
        long[] acc = {1, 1};
        eatLong(acc, parentCommId);
        eatInt(acc, nthSplit);
        eatInt(acc, color);
        return digest(acc);
    }

    /** A shrink's: as a split's with count and color 0, so two shrinks of one parent share it, as in NCCL. */
    static long ofShrink(long parentCommId) {
        return ofSplit(parentCommId, 0, 0);
    }

    /**
     * For ncclCommInitAll without the profiler plugin: NCCL hashes a unique id it makes inside the
     * call, which no bridge sees, so the clique gets an identity of the agent's own.
     */
    static long fresh() {
        return ThreadLocalRandom.current().nextLong();
    }

    static String hex(long commId) {
        // runs at every creation: no concatenation (the agent compiles it to a StringBuilder, which grows)
        if ((commId >>> 60) != 0) {
            return Long.toHexString(commId); // 16 digits already
        }
        byte[] digits = new byte[16];
        for (int i = 15; i >= 0; i--, commId >>>= 4) {
            digits[i] = (byte) Character.forDigit((int) commId & 0xf, 16);
        }
        return new String(digits, java.nio.charset.StandardCharsets.ISO_8859_1);
    }

    // --- NCCL's bitops.h, transcribed: unsigned 64-bit arithmetic is Java's long arithmetic ---

    /** NCCL's bootstrap magic of a communicator made from this unique id: its first 8 bytes, little-endian. */
    static long ncclMagic(byte[] uniqueId) {
        long v = 0;
        for (int i = 7; i >= 0; i--) {
            v = (v << 8) | (uniqueId[i] & 0xffL);
        }
        return v;
    }

    /** src/misc/utils.cc hashCombine: a grow's magic (parent magic, childCount) and its commHash (magic, nRanks). */
    static long ncclHashCombine(long base, long value) {
        long[] acc = {1, 1};
        eatLong(acc, base);
        eatLong(acc, value);
        return digest(acc);
    }


    /** eatHash: {@code size} bytes into the accumulator, 8 at a time, a short tail zero-extended. */
    private static void eat(long[] acc, byte[] bytes, int size) {
        acc[0] ^= size;
        int at = 0;
        int left = size;
        while (left != 0) {
            mixRound(acc);
            int chunk = Math.min(left, 8);
            long x = 0;
            for (int i = chunk - 1; i >= 0; i--) {
                x = (x << 8) | (bytes[at + i] & 0xffL);
            }
            at += chunk;
            left -= chunk;
            acc[0] += x;
        }
    }

    private static void eatLong(long[] acc, long value) {
        acc[0] ^= 8;
        mixRound(acc);
        acc[0] += value;
    }

    private static void eatInt(long[] acc, int value) {
        acc[0] ^= 4;
        mixRound(acc);
        acc[0] += value & 0xffffffffL;
    }

    private static void mixRound(long[] acc) {
        acc[0] += acc[1];
        acc[1] ^= acc[0];
        acc[0] ^= acc[0] >>> 31;
        acc[0] *= 0x9de62bbc8cef3ce3L;
        acc[1] ^= acc[1] >>> 32;
        acc[1] *= 0x485cd6311b599e79L;
    }

    private static long digest(long[] acc) {
        long h = acc[0];
        h ^= h >>> 31;
        h *= 0xbac3bd562846de6bL;
        h += acc[1];
        h ^= h >>> 32;
        h *= 0x995a187a14e7b445L;
        return h;
    }
}
