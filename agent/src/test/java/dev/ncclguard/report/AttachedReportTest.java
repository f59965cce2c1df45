package dev.ncclguard.report;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.ncclguard.cleanup.LeakOutcome;
import dev.ncclguard.cleanup.Outcome;
import dev.ncclguard.testkit.ReportJson;
import dev.ncclguard.track.HandleView;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The report of an agent attached to a running JVM, and the live report (a dump). */
class AttachedReportTest {
    private static final Instant ATTACHED = Instant.parse("2025-06-01T10:00:00.250Z");
    private static final Report.BeforeAttach RAS = new Report.BeforeAttach(Report.BeforeAttach.ANSWERED, 1, 2,
            "at attach, NCCL 2.28.3 RAS (localhost:28028) knew of 1 communicator in the job");
    private final HandleView comm = Views.comm(0x10, 0, 2, 0, "9f3c1a", Views.stack("com.example.Train.setup"));

    private static JsonNode json(Report report) throws Exception {
        return ReportJson.tree(JsonReportWriter.toJson(report));
    }

    @Test
    void attachedReportSaysSinceWhenItTracksAndWhatRasKnewBefore() throws Exception {
        Report report = Report.builder().leaks(List.of(comm)).attached(ATTACHED, RAS).build();

        JsonNode root = json(report);
        assertEquals("2025-06-01T10:00:00.250Z", root.path("attachedAt").asText());
        assertEquals("answered", root.path("beforeAttach").path("ras").asText());
        assertEquals(1, root.path("beforeAttach").path("communicators").asInt());
        assertEquals(2, root.path("beforeAttach").path("ranksInThisProcess").asInt());
        assertEquals(RAS.note(), root.path("beforeAttach").path("note").asText());
        assertFalse(root.has("live"), "an exit report is not live: " + root);

        String text = TextReportWriter.toText(report);
        assertTrue(text.contains("ncclguard: tracking since 2025-06-01T10:00:00.250Z, when it was attached to the"
                + " running JVM; handles created before then are unknown to it\n"), text);
        assertTrue(text.contains("ncclguard: " + RAS.note() + "\n"), text);
        assertTrue(text.endsWith("SUMMARY: ncclguard: 1 leaked communicator (partial: tracked since"
                + " 2025-06-01T10:00:00.250Z, attached; 2 communicators existed before (NCCL RAS))\n"), text);
    }

    /** The false OK: a clean report of an attach says in its SUMMARY line that it is partial. */
    @Test
    void aCleanAttachedReportIsPartialInItsSummaryLine() {
        Report report = Report.builder().attached(ATTACHED,
                new Report.BeforeAttach(Report.BeforeAttach.UNAVAILABLE, null, null, "no RAS")).build();
        assertEquals("SUMMARY: ncclguard: no leaks (0 communicators created, 0 released) (partial: tracked since"
                + " 2025-06-01T10:00:00.250Z, attached; communicators made before are not known)",
                TextReportWriter.summary(report));
        Report jobWide = Report.builder().attached(ATTACHED,
                new Report.BeforeAttach(Report.BeforeAttach.ANSWERED, 3, null, "text answer")).build();
        assertTrue(TextReportWriter.summary(jobWide).endsWith("attached; NCCL RAS knew of 3 communicators in the job"
                + " before; those of this process are not known)"), TextReportWriter.summary(jobWide));
    }

    @Test
    void rasWithoutAnAnswerLeavesTheCountsOut() throws Exception {
        Report report = Report.builder().attached(ATTACHED,
                new Report.BeforeAttach(Report.BeforeAttach.UNAVAILABLE, null, null, "no RAS")).build();
        JsonNode before = json(report).path("beforeAttach");
        assertEquals("unavailable", before.path("ras").asText());
        assertFalse(before.has("communicators") || before.has("ranksInThisProcess"), before.toString());
    }

    @Test
    void reportOfAJvmStartedWithTheAgentHasNoAttachFields() throws Exception {
        Report report = Report.builder().leaks(List.of(comm)).build();
        JsonNode root = json(report);
        assertFalse(root.has("attachedAt") || root.has("beforeAttach") || root.has("live"), root.toString());
        assertFalse(TextReportWriter.toText(report).contains("tracking since"));
    }

    @Test
    void liveReportListsWhatIsNotReleasedYetAndNoCleanup() throws Exception {
        Report report = Report.builder().action(Report.ACTION_CLEANUP).live(true).leaks(List.of(comm))
                .cleanup(Map.of(comm, new LeakOutcome(Outcome.NONE, null))).build();
        assertTrue(json(report).path("live").asBoolean());
        String text = TextReportWriter.toText(report);
        assertTrue(text.startsWith("ncclguard: 1 handle not released yet, each a leak if the JVM exited now (live, pid "),
                text);
        assertFalse(text.contains("Cleanup:"), "cleanup happens at exit, not in a dump: " + text);
        assertTrue(text.endsWith("SUMMARY: ncclguard: 1 leaked communicator\n"), text);
    }
}
