package dev.ncclguard.report;

import java.time.Instant;

/**
 * The words for a report that an attach made: it covers the JVM only since the attach, so a clean
 * one is a partial "OK". One wording for the SUMMARY line, check's and merge's verdicts
 * (docs/usage.md, "Attach to a running JVM").
 *
 * <p>What existed before is known only from NCCL's RAS service, asked at the attach: its JSON answer
 * counts the ranks of this process (a handle each, as the report counts communicators), its text
 * answer only the communicators of the whole job. Without an answer, nothing is known of them, and
 * the words say so; events and streams made before an attach are never known.
 */
public final class Partial {
    private Partial() {
    }

    /**
     * "partial: tracked since 2026-11-29T19:40:04.314Z, attached; 2 communicators existed before".
     *
     * @param ranksHere     communicators of this process that existed at the attach (RAS JSON), or null
     * @param commsInJob    communicators of the whole job RAS knew of at the attach, or null
     */
    public static String words(Instant attachedAt, Integer ranksHere, Integer commsInJob) {
        return "partial: tracked since " + JsonReportWriter.iso(attachedAt) + ", attached; " + before(ranksHere, commsInJob);
    }

    /** The words for one report, or null when the agent started with the JVM. */
    public static String of(Report report) {
        if (report.attachedAt() == null) {
            return null;
        }
        Report.BeforeAttach b = report.beforeAttach();
        return words(report.attachedAt(), b == null ? null : b.ranksHere(), b == null ? null : b.communicators());
    }

    /** What is known of the communicators made before the attach. */
    public static String before(Integer ranksHere, Integer commsInJob) {
        if (ranksHere != null) {
            return ranksHere + (ranksHere == 1 ? " communicator" : " communicators") + " existed before (NCCL RAS)";
        }
        if (commsInJob != null) {
            return "NCCL RAS knew of " + commsInJob + (commsInJob == 1 ? " communicator" : " communicators")
                    + " in the job before; those of this process are not known";
        }
        return "communicators made before are not known";
    }
}
