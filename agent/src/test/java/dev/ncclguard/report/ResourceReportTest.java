package dev.ncclguard.report;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.ncclguard.catalog.Kind;
import dev.ncclguard.cleanup.LeakOutcome;
import dev.ncclguard.cleanup.Outcome;
import dev.ncclguard.testkit.ReportJson;
import dev.ncclguard.testkit.SchemaCheck;
import dev.ncclguard.track.HandleView;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The report of NCCL's other resources: a communicator's registrations, device communicators, memory. */
class ResourceReportTest {

    private final HandleView comm = revokedCommWithRegistrations();
    private final HandleView devComm = new HandleView(Kind.DEVCOMM, 0x40, "ncclDevCommCreate", "jni", "rank-0",
            Views.T0 + 1, Views.stack("com.example.Ep.open"), 0,
            Map.of("comm", "0x10", "rank", 0, "nranks", 2, "device", 0), null);
    private final HandleView memory = new HandleView(Kind.MEMORY, 0x7f0000, "ncclMemAlloc", "jni", "rank-0",
            Views.T0 + 2, Views.stack("com.example.Ep.buffers"), 0, Map.of("bytes", 1048576L, "device", 0), null);

    private static HandleView revokedCommWithRegistrations() {
        Map<String, Object> details = new LinkedHashMap<>();
        details.put("rank", 0);
        details.put("nranks", 2);
        details.put("device", 0);
        details.put("commId", "9f3c1a0000000000");
        details.put("revoked", true);
        details.put("registrations", Map.of("registered", 5L, "stillRegistered", 2L, "bytes", 8192L));
        details.put("windows", Map.of("registered", 1L, "stillRegistered", 1L, "bytes", 4096L));
        details.put("deviceCommunicators", 1);
        return new HandleView(Kind.COMM, 0x10, "ncclCommInitRank", "jni", "rank-0", Views.T0,
                Views.stack("com.example.Ep.join"), 0, details, null);
    }

    private Report report(String action, Map<HandleView, LeakOutcome> cleanup) {
        return Report.builder().action(action).pid(4242).host("gpu-01").communicators(1, 0)
                .leaks(List.of(memory, devComm, comm)).cleanup(cleanup).build();
    }

    @Test
    void summaryCountsDeviceCommunicatorsAndMemoryApart() {
        Report r = report("report", Map.of());
        assertEquals(1, r.summary().leakedComms());
        assertEquals(1, r.summary().leakedDevComms());
        assertEquals(1, r.summary().leakedMemory());
        String text = TextReportWriter.toText(r);
        assertTrue(text.endsWith("SUMMARY: ncclguard: 1 leaked communicator, 1 leaked device communicator,"
                + " 1 unfreed NCCL allocation\n"), text);
    }

    @Test
    void leaksComeInKindOrderCommunicatorsFirstMemoryLast() {
        assertEquals(List.of(Kind.COMM, Kind.DEVCOMM, Kind.MEMORY),
                report("report", Map.of()).leaks().stream().map(Leak::kind).toList());
    }

    @Test
    void revokedCommunicatorSaysSoAndShowsWhatIsStillRegistered() {
        String text = TextReportWriter.toText(report("report", Map.of()));
        assertTrue(text.contains("Leaked communicator 0x10 (rank 0 of 2, device 0, commId 9f3c1a0000000000, revoked,"
                + " 2 of 5 registrations still registered (8192 bytes), 1 of 1 window still registered (4096 bytes),"
                + " 1 device communicator): created by ncclCommInitRank, revoked (ncclCommRevoke) and never destroyed"
                + " or aborted\n"), text);
    }

    @Test
    void deviceCommunicatorAndMemorySayWhatToDo() {
        String text = TextReportWriter.toText(report("report", Map.of()));
        assertTrue(text.contains("Leaked device communicator 0x40 (rank 0 of 2, device 0, comm 0x10): created by"
                + " ncclDevCommCreate, never destroyed, its communicator alive\n"), text);
        assertTrue(text.contains("  What to do: destroy it with ncclDevCommDestroy before its communicator is destroyed.\n"),
                text);
        assertTrue(text.contains("Unfreed NCCL memory 0x7f0000 (device 0, 1048576 bytes): created by ncclMemAlloc,"
                + " never freed\n"), text);
        assertTrue(text.contains("  What to do: free it with ncclMemFree once no communicator uses it (deregister it first).\n"),
                text);
    }

    @Test
    void cleanupSaysHowEachWasReleased() {
        String text = TextReportWriter.toText(report("cleanup", Map.of(
                comm, new LeakOutcome(Outcome.DESTROYED, null),
                devComm, new LeakOutcome(Outcome.DESTROYED, null),
                memory, new LeakOutcome(Outcome.FREED, null))));
        assertTrue(text.contains("  Cleanup: destroyed with ncclDevCommDestroy.\n"), text);
        assertTrue(text.contains("  Cleanup: freed with ncclMemFree.\n"), text);
        assertTrue(text.contains("(cleaned 3, failed 0)"), text);
    }

    @Test
    void jsonOfTheNewKindsFollowsTheSchema() throws Exception {
        Report r = report("cleanup", Map.of(memory, new LeakOutcome(Outcome.FREED, null)));
        String json = new String(JsonReportWriter.toBytes(r), StandardCharsets.UTF_8);
        SchemaCheck.assertValid(json, "of the new kinds");
        JsonNode root = ReportJson.tree(json);
        assertEquals(1, root.path("summary").path("leakedDevComms").asInt());
        assertEquals(1, root.path("summary").path("leakedMemory").asInt());
        JsonNode c = root.path("leaks").path(0);
        assertEquals(2, c.path("details").path("registrations").path("stillRegistered").asInt());
        assertTrue(c.path("details").path("revoked").asBoolean());
        assertEquals("devcomm", root.path("leaks").path(1).path("kind").asText());
        assertEquals("memory", root.path("leaks").path(2).path("kind").asText());
        assertEquals("freed", root.path("leaks").path(2).path("cleanup").asText());
    }
}
