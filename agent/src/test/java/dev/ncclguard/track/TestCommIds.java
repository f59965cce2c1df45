package dev.ncclguard.track;

/** NCCL's commId of a unique id as the tracker computes it, for tests of other packages. */
public final class TestCommIds {
    private TestCommIds() {
    }

    public static long ofUniqueId(byte[] uniqueId) {
        return CommIds.ofUniqueId(uniqueId);
    }
}
