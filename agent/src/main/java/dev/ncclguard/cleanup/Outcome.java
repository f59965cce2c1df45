package dev.ncclguard.cleanup;

import dev.ncclguard.catalog.Kind;

/**
 * What cleanup did to one leak, in the words of the report's {@code cleanup} field. Those words
 * are the vocabulary everywhere: the text report, {@code text=log}, {@code check} and its JUnit XML
 * say the field's word first and explain it the same way ({@link #describe}).
 */
public enum Outcome {
    /** Not attempted (action=report). */
    NONE("none"),
    /** Its work completed while cleanup polled; an event is then also destroyed. */
    SYNCHRONIZED("synchronized"),
    DESTROYED("destroyed"),
    /** ncclMemAlloc's memory, freed with ncclMemFree; an addition to the contract's values. */
    FREED("freed"),
    ABORTED("aborted"),
    /** A native call did not return, or the work did not complete, before the deadline. */
    TIMED_OUT("timed-out"),
    FAILED("failed");

    private final String word;

    Outcome(String word) {
        this.word = word;
    }

    public String word() {
        return word;
    }

    /** The outcome of a report's {@code cleanup} word; null for a word this agent does not write. */
    public static Outcome of(String word) {
        for (Outcome o : values()) {
            if (o.word.equals(word)) {
                return o;
            }
        }
        return null;
    }

    /**
     * The report's word with what it means for a leak of {@code kind}: "synchronized (its work
     * completed while cleanup waited), then destroyed with cudaEventDestroy". Always starts with
     * {@link #word()}.
     */
    public String describe(Kind kind) {
        return switch (this) {
            case NONE -> "none";
            case SYNCHRONIZED -> kind == Kind.EVENT
                    ? "synchronized (its work completed while cleanup waited), then destroyed with cudaEventDestroy"
                    : "synchronized (its work completed while cleanup waited); the stream is left to the application";
            case DESTROYED -> kind == Kind.COMM ? "destroyed with ncclCommDestroy"
                    : kind == Kind.DEVCOMM ? "destroyed with ncclDevCommDestroy" : "destroyed with cudaEventDestroy";
            case FREED -> "freed with ncclMemFree";
            case ABORTED -> "aborted with ncclCommAbort";
            case TIMED_OUT, FAILED -> word;
        };
    }

    /** Whether the leak counts as cleaned in the report's summary. */
    public boolean cleaned() {
        return this == SYNCHRONIZED || this == DESTROYED || this == FREED || this == ABORTED;
    }

    /** Whether the leak counts as a cleanup failure in the report's summary. */
    public boolean unsuccessful() {
        return this == TIMED_OUT || this == FAILED;
    }
}
