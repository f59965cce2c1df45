package dev.ncclguard.catalog;

/** What a tracked handle is, in the words of the report's {@code kind} field. */
public enum Kind {
    COMM("comm"), EVENT("event"), STREAM("stream");

    private final String word;

    Kind(String word) {
        this.word = word;
    }

    public String word() {
        return word;
    }
}
