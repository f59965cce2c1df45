package dev.ncclguard.cleanup;

/** What cleanup did to one leak, in the words of the report's {@code cleanup} field. */
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

    /** Whether the leak counts as cleaned in the report's summary. */
    public boolean cleaned() {
        return this == SYNCHRONIZED || this == DESTROYED || this == FREED || this == ABORTED;
    }

    /** Whether the leak counts as a cleanup failure in the report's summary. */
    public boolean unsuccessful() {
        return this == TIMED_OUT || this == FAILED;
    }
}
