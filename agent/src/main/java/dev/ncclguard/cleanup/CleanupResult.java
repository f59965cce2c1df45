package dev.ncclguard.cleanup;

import java.util.Objects;

/**
 * The outcome of cleanup for one leak, and why when it is not plain.
 *
 * @param note a short sentence for the report, or null
 */
public record CleanupResult(CleanupOutcome outcome, String note) {
    public static final CleanupResult NONE = new CleanupResult(CleanupOutcome.NONE, null);

    public CleanupResult {
        Objects.requireNonNull(outcome, "outcome");
    }

    static CleanupResult of(CleanupOutcome outcome) {
        return new CleanupResult(outcome, null);
    }

    static CleanupResult of(CleanupOutcome outcome, String note) {
        return new CleanupResult(outcome, note);
    }
}
