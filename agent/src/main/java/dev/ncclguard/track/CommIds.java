package dev.ncclguard.track;

import java.nio.ByteBuffer;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Communicator identities that every rank and process of one communicator computes alike, so
 * reports of several ranks can be joined: 64 bits, the first 16 hex digits of a SHA-256.
 */
final class CommIds {
    private static final byte[] SPLIT = {'s', 'p', 'l', 'i', 't'};
    private static final byte[] SHRINK = {'s', 'h', 'r', 'i', 'n', 'k'};

    private CommIds() {
    }

    /** Of the 128 bytes of the ncclUniqueId that every rank passed to its init call. */
    static long ofUniqueId(byte[] uniqueId) {
        MessageDigest sha = sha256();
        sha.update(uniqueId);
        return first64(sha.digest());
    }

    /**
     * Of the n-th split of a parent with a color: every rank of the child has the same parent,
     * the same color and, since split is collective on the parent, the same n. The split's key is
     * left out: it orders ranks inside the child and differs on every rank, so with it each rank
     * would name one communicator differently.
     */
    static long ofSplit(long parentCommId, int color, int nthSplit) {
        MessageDigest sha = sha256();
        sha.update(SPLIT);
        sha.update(ByteBuffer.allocate(16).putLong(parentCommId).putInt(color).putInt(nthSplit).array());
        return first64(sha.digest());
    }

    /** Of the n-th shrink of a parent; every surviving rank shrinks the parent in the same order. */
    static long ofShrink(long parentCommId, int nthShrink) {
        MessageDigest sha = sha256();
        sha.update(SHRINK);
        sha.update(ByteBuffer.allocate(12).putLong(parentCommId).putInt(nthShrink).array());
        return first64(sha.digest());
    }

    /** For ncclCommInitAll, whose clique lives in one process and has no unique id to hash. */
    static long fresh() {
        return ThreadLocalRandom.current().nextLong();
    }

    static String hex(long commId) {
        String digits = Long.toHexString(commId);
        return "0".repeat(16 - digits.length()) + digits;
    }

    private static long first64(byte[] digest) {
        return ByteBuffer.wrap(digest).getLong();
    }

    private static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            // every Java platform must provide SHA-256 (MessageDigest's javadoc)
            throw new IllegalStateException(e);
        }
    }
}
