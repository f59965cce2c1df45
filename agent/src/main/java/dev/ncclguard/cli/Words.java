package dev.ncclguard.cli;

import dev.ncclguard.catalog.DetailKeys;
import dev.ncclguard.catalog.Kind;
import dev.ncclguard.cleanup.Outcome;
import dev.ncclguard.json.ReportSchema;
import dev.ncclguard.log.OneLine;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** How the commands put reports into words: leaks in one line, counts, times. */
final class Words {
    private Words() {
    }

    /** 1234567 as "1,234,567". */
    static String thousands(long n) {
        return String.format(java.util.Locale.ROOT, "%,d", n);
    }

    static String count(long n, String one, String many) {
        return n + " " + (n == 1 ? one : many);
    }

    /** "2 leaked communicators, 1 pending event"; "no leaks" when all are 0. */
    static String leakCounts(ReportSchema.Summary s) {
        long[] byKind = new long[Kind.values().length];
        for (Kind k : Kind.values()) {
            byKind[k.ordinal()] = s.leaked(k);
        }
        return leakCounts(byKind);
    }

    /** The counts of leaks by kind, in the order of {@link Kind}'s constants (fewer: the rest 0). */
    static String leakCounts(long... byKind) {
        List<String> parts = new ArrayList<>();
        for (int k = 0; k < byKind.length; k++) {
            if (byKind[k] > 0) {
                parts.add(Kind.values()[k].count(byKind[k]));
            }
        }
        return parts.isEmpty() ? "no leaks" : String.join(", ", parts);
    }

    /** "leaked communicator 0x7f.. (rank 1 of 2, commId 9a87..) by ncclCommInitRank at pkg.Cls.m(Cls.java:9)" */
    static String leak(ReportFile.LeakEntry leak) {
        StringBuilder out = new StringBuilder(leak.kind().title()).append(' ').append(OneLine.of(leak.handle()));
        String details = details(leak.details());
        if (!details.isEmpty()) {
            out.append(" (").append(details).append(')');
        }
        out.append(" by ").append(OneLine.of(leak.api()));
        out.append(leak.topFrame() != null ? " at " + OneLine.of(leak.topFrame()) : ", no stack recorded");
        if (!leak.cleanup().equals("none")) {
            out.append(", cleanup ").append(cleanup(leak.kind(), leak.cleanup()));
        }
        return out.toString();
    }

    /**
     * A report's cleanup word as the agent's text report says it ("synchronized (its work completed
     * while cleanup waited), then destroyed with cudaEventDestroy"): one vocabulary; a word this
     * CLI does not know is shown as it is.
     */
    static String cleanup(Kind kind, String word) {
        Outcome outcome = Outcome.of(word);
        return outcome == null ? OneLine.of(word) : outcome.describe(kind);
    }

    static String details(Map<String, Object> details) {
        List<String> parts = new ArrayList<>();
        Integer rank = ReportFile.integer(details.get(DetailKeys.RANK));
        Integer nranks = ReportFile.integer(details.get(DetailKeys.NRANKS));
        if (rank != null) {
            parts.add("rank " + rank + (nranks != null ? " of " + nranks : ""));
        }
        Object device = details.get(DetailKeys.DEVICE);
        if (device != null) {
            parts.add("device " + OneLine.of(String.valueOf(device)));
        }
        Object commId = details.get(DetailKeys.COMM_ID);
        if (commId != null) {
            parts.add("commId " + OneLine.of(String.valueOf(commId)));
        }
        Object pendingOps = details.get(DetailKeys.PENDING_OPS);
        if (pendingOps != null) {
            parts.add(OneLine.of(String.valueOf(pendingOps)) + " pending ops");
        }
        if (Boolean.TRUE.equals(details.get(DetailKeys.STILL_PENDING))) {
            parts.add("still pending at exit");
        }
        return String.join(", ", parts);
    }

    /** Seconds from {@code origin}, to the millisecond: "+1.234s". */
    static String offset(Instant origin, Instant at) {
        long ms = Duration.between(origin, at).toMillis();
        return (ms < 0 ? "-" : "+") + Math.abs(ms) / 1000 + "." + String.format("%03d", Math.abs(ms) % 1000) + "s";
    }

    /** A length of time as a person reads it: "250 ms", "5.2 s", "4 min 05 s", "1 h 02 min". */
    static String duration(Duration d) {
        long ms = Math.max(0, d.toMillis());
        if (ms < 1000) {
            return ms + " ms";
        }
        if (ms < 10_000) {
            return String.format(java.util.Locale.ROOT, "%.2f s", ms / 1000.0);
        }
        if (ms < 60_000) {
            return String.format(java.util.Locale.ROOT, "%.1f s", ms / 1000.0);
        }
        long s = ms / 1000;
        if (s < 3600) {
            return s / 60 + " min " + String.format(java.util.Locale.ROOT, "%02d", s % 60) + " s";
        }
        return s / 3600 + " h " + String.format(java.util.Locale.ROOT, "%02d", s % 3600 / 60) + " min";
    }
}
