package dev.ncclguard.json;

import dev.ncclguard.catalog.Kind;
import java.util.List;

/**
 * The JSON report's schema (docs/spec.md): its name, and the summary, whose fields the agent
 * writes and the commands read. Both sides take them from here.
 */
public final class ReportSchema {
    public static final String NAME = "ncclguard-report/1";
    /** The summary's object in the report. */
    public static final String SUMMARY = "summary";

    /** The report's lists of leaks: counted, and listed but not counted. */
    public static final String LEAKS = "leaks";
    public static final String SUPPRESSED = "suppressed";

    private ReportSchema() {
    }

    /**
     * The fields of an entry of {@code leaks} and {@code suppressed}, in the order written; the
     * names of its {@code details} are catalog.DetailKeys.
     */
    public static final class LeakFields {
        public static final String KIND = "kind";
        public static final String HANDLE = "handle";
        public static final String API = "api";
        public static final String BRIDGE = "bridge";
        public static final String THREAD = "thread";
        public static final String CREATED_AT = "createdAt";
        public static final String STACK = "stack";
        public static final String CALLER_LIBRARY = "callerLibrary";
        public static final String CALLER_SYMBOL = "callerSymbol";
        public static final String NATIVE_STACK = "nativeStack";
        public static final String DETAILS = "details";
        public static final String CLEANUP = "cleanup";
        public static final String CLEANUP_NOTE = "cleanupNote";
        public static final String NOTE = "note";
        public static final String SUPPRESSION = "suppression";
        public static final String DEFAULT_STREAM = "defaultStream";

        private LeakFields() {
        }
    }

    /**
     * The report's summary: each component is the JSON field of its name ({@link #FIELDS}, in
     * the order written). {@code suppressed}, {@code leakedDevComms} and {@code leakedMemory} are
     * additions to the SPEC's fields ({@link #OPTIONAL}).
     */
    public record Summary(
            long commsCreated,
            long commsReleased,
            long leakedComms,
            long pendingEvents,
            long unsyncedStreams,
            long cleaned,
            long cleanupFailed,
            long suppressed,
            long leakedDevComms,
            long leakedMemory) {

        /** The count of each kind's leaks is named by its kind ({@link Kind#summaryField}). */
        public static final List<String> FIELDS = List.of("commsCreated", "commsReleased",
                Kind.COMM.summaryField(), Kind.EVENT.summaryField(), Kind.STREAM.summaryField(), "cleaned",
                "cleanupFailed", "suppressed", Kind.DEVCOMM.summaryField(), Kind.MEMORY.summaryField());
        /** The fields a report may lack, additions to the SPEC's: a report without them reads them as 0. */
        public static final List<String> OPTIONAL = List.of("suppressed", Kind.DEVCOMM.summaryField(),
                Kind.MEMORY.summaryField());

        /** The SPEC's seven fields and {@code suppressed}, the additions of NCCL 2.28's kinds as 0. */
        public Summary(long commsCreated, long commsReleased, long leakedComms, long pendingEvents,
                long unsyncedStreams, long cleaned, long cleanupFailed, long suppressed) {
            this(commsCreated, commsReleased, leakedComms, pendingEvents, unsyncedStreams, cleaned, cleanupFailed,
                    suppressed, 0, 0);
        }

        /** The count of leaks of one kind. */
        public long leaked(Kind kind) {
            return switch (kind) {
                case COMM -> leakedComms;
                case EVENT -> pendingEvents;
                case STREAM -> unsyncedStreams;
                case DEVCOMM -> leakedDevComms;
                case MEMORY -> leakedMemory;
            };
        }

        /** The leaks of every kind. */
        public long leaks() {
            return leakedComms + pendingEvents + unsyncedStreams + leakedDevComms + leakedMemory;
        }

        /** The values in the order of {@link #FIELDS}. */
        public long[] values() {
            return new long[] {commsCreated, commsReleased, leakedComms, pendingEvents, unsyncedStreams, cleaned,
                cleanupFailed, suppressed, leakedDevComms, leakedMemory};
        }

        /** From values in the order of {@link #FIELDS}. */
        public static Summary of(long[] values) {
            return new Summary(values[0], values[1], values[2], values[3], values[4], values[5], values[6],
                    values[7], values[8], values[9]);
        }
    }
}
