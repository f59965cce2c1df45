package dev.ncclguard.track;

import java.util.concurrent.ThreadLocalRandom;

/**
 * Communicator identities that every rank and process of one communicator computes alike, so
 * reports of several ranks can be joined: a 64-bit hash, written as 16 hex digits. Not a
 * cryptographic hash on purpose: MessageDigest's first use initializes the JDK's security
 * providers, some 40 ms of the application's start-up, and a job has few communicators to tell apart.
 */
final class CommIds {
    /** Domain tags, so a split and a shrink of one parent never share an id. */
    private static final long SPLIT = 0x73706c6974L;
    private static final long SHRINK = 0x736872696e6bL;

    private CommIds() {
    }

    /** Of the 128 bytes of the ncclUniqueId that every rank passed to its init call. */
    static long ofUniqueId(byte[] uniqueId) {
        long h = SEED;
        int i = 0;
        for (; i + 8 <= uniqueId.length; i += 8) {
            h = mix(h, littleEndianLong(uniqueId, i));
        }
        for (; i < uniqueId.length; i++) {
            h = mix(h, uniqueId[i] & 0xffL);
        }
        return finish(h, uniqueId.length);
    }

    /**
     * Of the n-th split of a parent with a color: every rank of the child has the same parent,
     * the same color and, since split is collective on the parent, the same n. The split's key is
     * left out: it orders ranks inside the child and differs on every rank, so with it each rank
     * would name one communicator differently.
     */
    static long ofSplit(long parentCommId, int color, int nthSplit) {
        long h = mix(mix(SEED, SPLIT), parentCommId);
        return finish(mix(h, ((long) color << 32) | (nthSplit & 0xffffffffL)), 3);
    }

    /** Of the n-th shrink of a parent; every surviving rank shrinks the parent in the same order. */
    static long ofShrink(long parentCommId, int nthShrink) {
        long h = mix(mix(SEED, SHRINK), parentCommId);
        return finish(mix(h, nthShrink & 0xffffffffL), 3);
    }

    /** For ncclCommInitAll, whose clique lives in one process and has no unique id to hash. */
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

    // --- NCCL's own identities (src/include/bitops.h, src/misc/utils.cc, src/init.cc of
    // v2.28.3-1 and v2.29.3-1), as the emulator's nccl_core.c transcribes them ---

    /** NCCL's bootstrap magic of a communicator made from this unique id: its first 8 bytes. */
    static long ncclMagic(byte[] uniqueId) {
        return littleEndianLong(uniqueId, 0);
    }

    /** NCCL's commHash of an init from this unique id: getHash(id, NCCL_UNIQUE_ID_BYTES). */
    static long ncclInitHash(byte[] uniqueId) {
        long[] acc = {1, 1};
        eat(acc, uniqueId, uniqueId.length);
        return digest(acc);
    }

    /**
     * NCCL's commHash of a split's child (eatHash of the parent's commHash, the parent's
     * childCount after the split, the color, as ints); of a shrink's with childCount and color 0.
     */
    static long ncclSplitHash(long parentHash, int childCount, int color) {
        long[] acc = {1, 1};
        eat(acc, parentHash, 8);
        eat(acc, childCount & 0xffffffffL, 4);
        eat(acc, color & 0xffffffffL, 4);
        return digest(acc);
    }

    /** src/misc/utils.cc hashCombine: a grow's magic (parent magic, childCount) and its commHash (magic, nRanks). */
    static long ncclHashCombine(long base, long value) {
        long[] acc = {1, 1};
        eat(acc, base, 8);
        eat(acc, value, 8);
        return digest(acc);
    }

    /** bitops.h eatHash of {@code size} bytes. */
    private static void eat(long[] acc, byte[] bytes, int size) {
        acc[0] ^= size;
        for (int at = 0; at < size; at += 8) {
            long x = 0;
            for (int i = Math.min(8, size - at) - 1; i >= 0; i--) {
                x = (x << 8) | (bytes[at + i] & 0xffL);
            }
            round(acc, x);
        }
    }

    /** eatHash of a value of {@code size} (4 or 8) bytes, little-endian as in memory. */
    private static void eat(long[] acc, long value, int size) {
        acc[0] ^= size;
        round(acc, size == 8 ? value : value & 0xffffffffL);
    }

    private static void round(long[] acc, long x) {
        acc[0] += acc[1];
        acc[1] ^= acc[0];
        acc[0] ^= acc[0] >>> 31;
        acc[0] *= 0x9de62bbc8cef3ce3L;
        acc[1] ^= acc[1] >>> 32;
        acc[1] *= 0x485cd6311b599e79L;
        acc[0] += x;
    }

    /** bitops.h digestHash. */
    private static long digest(long[] acc) {
        long h = acc[0];
        h ^= h >>> 31;
        h *= 0xbac3bd562846de6bL;
        h += acc[1];
        h ^= h >>> 32;
        h *= 0x995a187a14e7b445L;
        return h;
    }

    private static final long SEED = 0x6e63636c67756172L; // "ncclguar"
    private static final long GOLDEN = 0x9E3779B97F4A7C15L;

    /** One word into the running hash: order-dependent, every input bit reaches every output bit. */
    private static long mix(long h, long word) {
        return Long.rotateLeft(h ^ fmix64(word + GOLDEN), 29) * GOLDEN;
    }

    private static long finish(long h, int length) {
        return fmix64(h ^ length);
    }

    /** MurmurHash3's 64-bit finalizer. */
    private static long fmix64(long k) {
        k ^= k >>> 33;
        k *= 0xff51afd7ed558ccdL;
        k ^= k >>> 33;
        k *= 0xc4ceb9fe1a85ec53L;
        k ^= k >>> 33;
        return k;
    }

    private static long littleEndianLong(byte[] b, int at) {
        long v = 0;
        for (int i = 7; i >= 0; i--) {
            v = (v << 8) | (b[at + i] & 0xffL);
        }
        return v;
    }
}
