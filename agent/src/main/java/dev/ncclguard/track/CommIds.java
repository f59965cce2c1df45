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
