package dev.ncclguard.json;

import java.util.List;

/**
 * The JSON report's schema (docs/spec.md): its name, and the summary, whose fields the agent
 * writes and the commands read. Both sides take them from here.
 */
public final class ReportSchema {
    public static final String NAME = "ncclguard-report/1";
    /** The summary's object in the report. */
    public static final String SUMMARY = "summary";

    private ReportSchema() {
    }

    /**
     * The report's summary: each component is the JSON field of its name ({@link #FIELDS}, in
     * the order written). {@code suppressed} is an addition to the SPEC's fields; a report without
     * it reads as 0.
     */
    public record Summary(
            long commsCreated,
            long commsReleased,
            long leakedComms,
            long pendingEvents,
            long unsyncedStreams,
            long cleaned,
            long cleanupFailed,
            long suppressed) {

        public static final List<String> FIELDS = List.of("commsCreated", "commsReleased", "leakedComms",
                "pendingEvents", "unsyncedStreams", "cleaned", "cleanupFailed", "suppressed");
        /** The one field a report may lack: {@code suppressed}, an addition. */
        public static final String OPTIONAL = "suppressed";

        /** The values in the order of {@link #FIELDS}. */
        public long[] values() {
            return new long[] {commsCreated, commsReleased, leakedComms, pendingEvents, unsyncedStreams, cleaned,
                cleanupFailed, suppressed};
        }

        /** From values in the order of {@link #FIELDS}. */
        public static Summary of(long[] values) {
            return new Summary(values[0], values[1], values[2], values[3], values[4], values[5], values[6],
                    values[7]);
        }
    }
}
