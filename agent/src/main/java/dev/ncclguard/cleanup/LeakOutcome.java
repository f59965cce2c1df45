package dev.ncclguard.cleanup;

import java.util.Objects;

/**
 * The outcome of cleanup for one leak, and why when it is not plain.
 *
 * @param note a short sentence for the report, or null
 */
public record LeakOutcome(Outcome outcome, String note) {
    public static final LeakOutcome NONE = new LeakOutcome(Outcome.NONE, null);

    public LeakOutcome {
        Objects.requireNonNull(outcome, "outcome");
    }

    static LeakOutcome of(Outcome outcome) {
        return new LeakOutcome(outcome, null);
    }

    static LeakOutcome of(Outcome outcome, String note) {
        return new LeakOutcome(outcome, note);
    }
}
