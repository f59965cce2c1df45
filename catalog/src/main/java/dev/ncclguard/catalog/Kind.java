package dev.ncclguard.catalog;

/**
 * What a tracked handle is, in the words of the report's {@code kind} field. {@code devcomm} and
 * {@code memory} are additions to the contract's kinds (docs/spec.md): device communicators
 * (ncclDevCommCreate) and ncclMemAlloc's memory.
 */
public enum Kind {
    COMM("comm"), EVENT("event"), STREAM("stream"), DEVCOMM("devcomm"), MEMORY("memory");

    private final String word;

    Kind(String word) {
        this.word = word;
    }

    public String word() {
        return word;
    }
}
