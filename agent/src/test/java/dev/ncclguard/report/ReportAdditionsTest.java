package dev.ncclguard.report;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.ncclguard.cleanup.LeakOutcome;
import dev.ncclguard.cleanup.Outcome;
import dev.ncclguard.config.Suppressions;
import dev.ncclguard.testkit.ReportJson;
import dev.ncclguard.testkit.SchemaCheck;
import dev.ncclguard.track.CommLife;
import dev.ncclguard.track.HandleView;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The report's additions to schema ncclguard-report/1: suppressed leaks and the communicators list. */
class ReportAdditionsTest {
    private static final Throwable WARMUP = Views.stack("com.example.Warmup.init", "com.example.Main.main");
    private static final Throwable TRAIN = Views.stack("com.example.Train.step", "com.example.Main.main");

    private final HandleView warmupComm = Views.comm(0x10, 0, 2, 0, "00000000000000aa", WARMUP);
    private final HandleView trainComm = Views.comm(0x20, 1, 2, 1, "00000000000000bb", TRAIN);
    private final HandleView warmupEvent = Views.event(0x30, 0x40, WARMUP);

    private static Suppressions rules(String... lines) {
        return Suppressions.of("test", Suppressions.parse(List.of(lines)));
    }

    private Report.Builder builder() {
        return Report.builder().pid(7).host("h").startedAt(Instant.ofEpochMilli(Views.T0))
                .writtenAt(Instant.ofEpochMilli(Views.T0 + 5_000))
                .leaks(List.of(warmupComm, trainComm, warmupEvent));
    }

    @Test
    void suppressedLeaksAreListedApartAndNotCounted() {
        Report r = builder().suppressions(rules("leak:Warmup.init")).build();

        assertEquals(1, r.leaks().size());
        assertEquals("0x20", r.leaks().get(0).handle());
        assertEquals(2, r.suppressed().size());
        assertEquals("leak:Warmup.init", r.suppressed().get(0).rule());
        assertEquals(1, r.summary().leakedComms());
        assertEquals(0, r.summary().pendingEvents());
        assertEquals(2, r.summary().suppressed());
        assertTrue(r.hasLeaks());
    }

    @Test
    void reportWhoseEveryLeakIsSuppressedHasNoLeaks() {
        Report r = builder().suppressions(rules("leak:com.example.Main.main")).build();
        assertFalse(r.hasLeaks());
        String text = TextReportWriter.toText(r);
        assertTrue(text.contains("Suppressed (listed, not counted):"), text);
        assertTrue(text.contains("Leaked communicator 0x10 (rank 0 of 2, device 0, commId 00000000000000aa) at "
                + "com.example.Warmup.init(Warmup.java:10): suppressed by 'leak:com.example.Main.main'"), text);
        assertTrue(text.endsWith("SUMMARY: ncclguard: no leaks (0 communicators created, 0 released; 3 suppressed)\n"),
                text);
    }

    @Test
    void summaryLineCountsSuppressedApart() {
        Report r = builder().suppressions(rules("event:Warmup")).build();
        assertEquals("SUMMARY: ncclguard: 2 leaked communicators (1 suppressed)", TextReportWriter.summary(r));
    }

    @Test
    void jsonListsSuppressedLeaksWithTheirRule() throws Exception {
        Report r = builder().suppressions(rules("comm:Warmup")).build();
        JsonNode root = ReportJson.tree(JsonReportWriter.toJson(r));
        assertEquals(2, root.path("leaks").size());
        assertEquals(1, root.path("suppressed").size());
        JsonNode s = root.path("suppressed").get(0);
        assertEquals("comm", s.path("kind").asText());
        assertEquals("0x10", s.path("handle").asText());
        assertEquals("comm:Warmup", s.path("suppression").asText());
        assertEquals("com.example.Warmup.init(Warmup.java:10)", s.path("stack").get(0).asText());
        assertEquals(1, root.path("summary").path("suppressed").asInt());
        assertEquals(1, root.path("summary").path("leakedComms").asInt());
    }

    @Test
    void communicatorsListSaysWhichWereReleasedHowAndWhichLeaked() throws Exception {
        List<CommLife> lives = List.of(
                new CommLife(0x10, "ncclCommInitRank", "main", 0, 0, 2, "00000000000000aa", null,
                        Views.T0 + 0x10, 0, null),
                new CommLife(0x20, "ncclCommInitRank", "main", 1, 1, 2, "00000000000000bb", null,
                        Views.T0 + 0x20, 0, null),
                new CommLife(0x50, "ncclCommSplit", "main", 0, -1, -1, "00000000000000cc", "00000000000000aa",
                        Views.T0 + 0x50, Views.T0 + 900, "ncclCommDestroy"));
        Report r = builder().action(Report.ACTION_CLEANUP)
                .cleanup(Map.of(trainComm, new LeakOutcome(Outcome.DESTROYED, null)))
                .suppressions(rules("comm:Warmup"))
                .communicators(lives, 4).build();

        JsonNode root = ReportJson.tree(JsonReportWriter.toJson(r));
        JsonNode list = root.path("communicators");
        assertEquals(3, list.size());
        JsonNode warm = list.get(0);
        assertEquals(List.of("commId", "rank", "nranks", "device", "handle", "api", "thread", "createdAt",
                "releasedAt", "releasedBy", "leaked", "suppressed", "cleanup"), fieldNames(warm));
        assertTrue(warm.path("leaked").asBoolean());
        assertTrue(warm.path("suppressed").asBoolean());
        assertTrue(warm.path("releasedAt").isNull());
        assertTrue(warm.path("releasedBy").isNull());
        assertEquals("none", warm.path("cleanup").asText());
        JsonNode train = list.get(1);
        assertEquals(1, train.path("rank").asInt());
        assertFalse(train.has("suppressed"));
        assertEquals("destroyed", train.path("cleanup").asText());
        JsonNode split = list.get(2);
        assertFalse(split.path("leaked").asBoolean());
        assertTrue(split.path("rank").isNull());
        assertEquals("ncclCommDestroy", split.path("releasedBy").asText());
        assertEquals(JsonReportWriter.iso(Instant.ofEpochMilli(Views.T0 + 900)), split.path("releasedAt").asText());
        assertFalse(split.has("cleanup"));
        assertEquals(4, root.path("communicatorsOmitted").asInt());
    }

    @Test
    void communicatorsListSaysWhenEachReleaseWasCalledWhereTheAgentSawIt() throws Exception {
        List<CommLife> lives = List.of(
                new CommLife(0x10, "ncclCommInitRank", "main", 0, 0, 2, "00000000000000aa", null,
                        Views.T0 + 0x10, Views.T0 + 400, Views.T0 + 5_400, "ncclCommDestroy"),
                new CommLife(0x20, "ncclCommInitRank", "main", 1, 1, 2, "00000000000000bb", null,
                        Views.T0 + 0x20, Views.T0 + 600, 0, null),
                new CommLife(0x50, "ncclCommInitRank", "main", 0, 0, 2, "00000000000000cc", null,
                        Views.T0 + 0x50, Views.T0 + 900, "ncclCommDestroy"));
        Report r = builder().communicators(lives, 0).build();

        String json = JsonReportWriter.toJson(r);
        SchemaCheck.assertValid(json, "releaseStartedAt");
        JsonNode list = ReportJson.tree(json).path("communicators");
        JsonNode waited = list.get(0);
        assertEquals(List.of("commId", "rank", "nranks", "device", "handle", "api", "thread", "createdAt",
                "releaseStartedAt", "releasedAt", "releasedBy", "leaked"), fieldNames(waited));
        assertEquals(JsonReportWriter.iso(Instant.ofEpochMilli(Views.T0 + 400)), waited.path("releaseStartedAt").asText());
        JsonNode inFlight = list.get(1);
        assertTrue(inFlight.path("leaked").asBoolean());
        assertEquals(JsonReportWriter.iso(Instant.ofEpochMilli(Views.T0 + 600)), inFlight.path("releaseStartedAt").asText(),
                "a destroy still inside NCCL at exit");
        assertTrue(inFlight.path("releasedAt").isNull());
        assertFalse(list.get(2).has("releaseStartedAt"), "not known: left out");
    }

    private static List<String> fieldNames(JsonNode node) {
        List<String> names = new java.util.ArrayList<>();
        node.fieldNames().forEachRemaining(names::add);
        return names;
    }
}
