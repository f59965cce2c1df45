package dev.ncclguard.report;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.ncclguard.catalog.Kind;
import dev.ncclguard.cleanup.LeakOutcome;
import dev.ncclguard.cleanup.Outcome;
import dev.ncclguard.testkit.ReportJson;
import dev.ncclguard.track.HandleView;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class JsonReportWriterTest {
    private static JsonNode parse(Report report) throws IOException {
        byte[] bytes = JsonReportWriter.toBytes(report);
        // A strict decoder: the bytes must be well-formed UTF-8, not merely parseable.
        StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(bytes));
        return ReportJson.tree(bytes);
    }

    private static List<String> fieldNames(JsonNode node) {
        List<String> names = new ArrayList<>();
        node.fieldNames().forEachRemaining(names::add);
        return names;
    }

    private static Report sample() {
        HandleView comm = Views.comm(0x7f3a2c001200L, 0, 2, 0, "9f3c1a", Views.stack("com.example.Train.setup",
                "com.example.Train.main"));
        HandleView event = Views.event(0x20, 0x99, null);
        HandleView stream = Views.stream(0x30, 4, null);
        return Report.builder().action("cleanup").communicators(2, 0)
                .startedAt(Instant.parse("2025-06-01T10:00:00Z")).writtenAt(Instant.parse("2025-06-01T10:05:00.123Z"))
                .pid(4242).host("gpu-01").agentVersion("0.1.0")
                .leaks(List.of(comm, event, stream))
                .stillPending(Map.of(event, true))
                .cleanup(Map.of(comm, new LeakOutcome(Outcome.ABORTED, "ncclCommDestroy returned 3"),
                        event, new LeakOutcome(Outcome.SYNCHRONIZED, null),
                        stream, new LeakOutcome(Outcome.TIMED_OUT, "still pending after 5000 ms")))
                .build();
    }

    @Test
    void reportHasTheSchemasFieldsInItsOrder() throws IOException {
        JsonNode root = parse(sample());

        // the SPEC's fields in its order, then the additions of docs/spec.md
        assertEquals(List.of("schema", "agentVersion", "pid", "host", "action", "startedAt", "writtenAt", "summary",
                "leaks", "suppressed", "communicators", "communicatorsOmitted"), fieldNames(root));
        assertEquals("ncclguard-report/1", root.get("schema").asText());
        assertEquals("0.1.0", root.get("agentVersion").asText());
        assertEquals(4242, root.get("pid").asLong());
        assertEquals("gpu-01", root.get("host").asText());
        assertEquals("cleanup", root.get("action").asText());
        assertEquals("2025-06-01T10:00:00Z", root.get("startedAt").asText());
        assertEquals("2025-06-01T10:05:00.123Z", root.get("writtenAt").asText());
        JsonNode summary = root.get("summary");
        assertEquals(List.of("commsCreated", "commsReleased", "leakedComms", "pendingEvents", "unsyncedStreams",
                "cleaned", "cleanupFailed", "suppressed", "leakedDevComms", "leakedMemory"), fieldNames(summary));
        assertEquals(List.of(2, 0, 1, 1, 1, 2, 1), List.of(summary.get("commsCreated").asInt(),
                summary.get("commsReleased").asInt(), summary.get("leakedComms").asInt(),
                summary.get("pendingEvents").asInt(), summary.get("unsyncedStreams").asInt(),
                summary.get("cleaned").asInt(), summary.get("cleanupFailed").asInt()));
    }

    @Test
    void eachLeakHasItsFieldsDetailsAndCleanup() throws IOException {
        JsonNode leaks = parse(sample()).get("leaks");

        assertEquals(3, leaks.size());
        JsonNode comm = leaks.get(0);
        assertEquals(List.of("kind", "handle", "api", "bridge", "thread", "createdAt", "stack", "details", "cleanup",
                "cleanupNote"), fieldNames(comm));
        assertEquals("comm", comm.get("kind").asText());
        assertEquals("0x7f3a2c001200", comm.get("handle").asText());
        assertEquals("ncclCommInitRank", comm.get("api").asText());
        assertEquals("jna-interface", comm.get("bridge").asText());
        assertEquals("main", comm.get("thread").asText());
        assertEquals(Instant.ofEpochMilli(Views.T0 + 0x7f3a2c001200L).toString(), comm.get("createdAt").asText());
        assertEquals("com.example.Train.setup(Train.java:10)", comm.get("stack").get(0).asText());
        assertEquals("com.example.Train.main(Train.java:11)", comm.get("stack").get(1).asText());
        assertEquals(List.of("rank", "nranks", "device", "commId"), fieldNames(comm.get("details")));
        assertEquals(2, comm.get("details").get("nranks").asInt());
        assertEquals("9f3c1a", comm.get("details").get("commId").asText());
        assertEquals("aborted", comm.get("cleanup").asText());
        assertEquals("ncclCommDestroy returned 3", comm.get("cleanupNote").asText());

        JsonNode event = leaks.get(1);
        assertEquals("event", event.get("kind").asText());
        assertTrue(event.get("details").get("stillPending").asBoolean());
        assertEquals("synchronized", event.get("cleanup").asText());
        assertFalse(event.has("cleanupNote"));
        assertTrue(event.get("stack").isArray());
        assertEquals(0, event.get("stack").size());

        JsonNode stream = leaks.get(2);
        assertEquals("stream", stream.get("kind").asText());
        assertEquals(4, stream.get("details").get("pendingOps").asLong());
        assertFalse(stream.get("details").has("stillPending"));
        assertEquals("timed-out", stream.get("cleanup").asText());
    }

    @Test
    void timesAreWrittenToTheMillisecond() throws IOException {
        JsonNode root = parse(Report.builder().startedAt(Instant.parse("2025-06-01T10:00:00.123456789Z"))
                .writtenAt(Instant.parse("2025-06-01T10:05:00.987654321Z")).build());

        assertEquals("2025-06-01T10:00:00.123Z", root.get("startedAt").asText());
        assertEquals("2025-06-01T10:05:00.987Z", root.get("writtenAt").asText());
    }

    @Test
    void cleanRunHasEmptyLeaks() throws IOException {
        JsonNode root = parse(Report.builder().communicators(2, 2).build());

        assertTrue(root.get("leaks").isArray());
        assertEquals(0, root.get("leaks").size());
        assertEquals(2, root.get("summary").get("commsReleased").asInt());
    }

    @Test
    void anyStringSurvivesIntact() throws IOException {
        StringBuilder controls = new StringBuilder();
        for (char c = 0; c < 0x20; c++) {
            controls.append(c);
        }
        String nasty = "quote\" backslash\\ slash/ " + controls + " del\u007f ñ 日本 😀 sep\u2028\u2029 end";
        HandleView view = new HandleView(Kind.COMM, 1, nasty, "jna-interface", "thread \"x\"\n" + nasty, Views.T0,
                Views.stack("com.example.Ünïcode\"Quoted.mé\\thod"), 0, Map.of("commId", nasty), null);

        JsonNode leak = parse(Report.builder().host(nasty).leaks(List.of(view)).build()).get("leaks").get(0);

        assertEquals(nasty, leak.get("api").asText());
        assertEquals("thread \"x\"\n" + nasty, leak.get("thread").asText());
        assertEquals(nasty, leak.get("details").get("commId").asText());
        assertEquals("com.example.Ünïcode\"Quoted.mé\\thod(Ünïcode\"Quoted.java:10)", leak.get("stack").get(0).asText());
    }

    @Test
    void unpairedSurrogatesBecomeReplacementCharactersAndPairsStay() throws IOException {
        String text = "lone high \uD83D, lone low \uDE00, pair \uD83D\uDE00, high at end \uD83D";
        HandleView view = new HandleView(Kind.EVENT, 1, "cudaEventCreate", "jni", text, Views.T0, null, 0,
                Map.of(), null);

        JsonNode leak = parse(Report.builder().leaks(List.of(view)).build()).get("leaks").get(0);

        assertEquals("lone high \uFFFD, lone low \uFFFD, pair \uD83D\uDE00, high at end \uFFFD",
                leak.get("thread").asText());
    }

    @Test
    void detailValuesKeepTheirJsonTypes() throws IOException {
        Map<String, Object> details = new LinkedHashMap<>();
        details.put("int", 3);
        details.put("long", 1L << 40);
        details.put("flag", true);
        details.put("nothing", null);
        details.put("nan", Double.NaN);
        details.put("list", List.of(1, "two"));
        HandleView view = new HandleView(Kind.STREAM, 0x50, "cudaStreamCreate", "jni", "main", Views.T0, null, 0,
                details, null);

        JsonNode parsed = parse(Report.builder().leaks(List.of(view)).build()).get("leaks").get(0).get("details");

        assertTrue(parsed.get("int").isInt());
        assertEquals(1L << 40, parsed.get("long").asLong());
        assertTrue(parsed.get("flag").isBoolean());
        assertTrue(parsed.get("nothing").isNull());
        assertEquals("NaN", parsed.get("nan").asText());
        assertEquals("two", parsed.get("list").get(1).asText());
    }

    @Test
    void eachOfManyLeaksHasItsOwnFieldsWhereTheyRepeatAndWhereTheyChange() throws IOException {
        // parts of an entry that repeat from leak to leak are written once and copied: each
        // field that can change is changed on its own, in runs and alone
        Throwable step = Views.stack("com.example.Train.step");
        Throwable eval = Views.stack("com.example.Train.eval");
        String[] threads = {"main", "worker-1"};
        List<HandleView> views = new ArrayList<>();
        Map<HandleView, Boolean> pending = new java.util.IdentityHashMap<>();
        Map<HandleView, LeakOutcome> cleanup = new java.util.IdentityHashMap<>();
        for (int i = 0; i < 400; i++) {
            Map<String, Object> details = new LinkedHashMap<>();
            details.put("stream", "0x" + Integer.toHexString(0x90 + i / 100));
            details.put("device", i / 200);
            HandleView v = new HandleView(Kind.EVENT, 0x1000 + i, i % 7 == 0 ? "cudaEventCreateWithFlags" : "cudaEventCreate",
                    "jna-interface", threads[i / 50 % 2], Views.T0 + i * 1000L, i % 3 == 0 ? eval : step, i / 200,
                    dev.ncclguard.track.Details.copyOf(details), null);
            views.add(v);
            if (i % 5 != 0) {
                pending.put(v, i % 2 == 0);
            }
            cleanup.put(v, new LeakOutcome(i % 11 == 0 ? Outcome.DESTROYED : Outcome.NONE,
                    i % 13 == 0 ? "note " + i : null));
        }
        Report report = Report.builder().action("cleanup").leaks(views).stillPending(pending).cleanup(cleanup).build();

        JsonNode leaks = parse(report).get("leaks");

        assertEquals(views.size(), leaks.size());
        for (int i = 0; i < views.size(); i++) {
            HandleView v = views.get(i);
            JsonNode leak = leaks.get(i);
            String at = "leak " + i + ": " + leak;
            assertEquals(v.hexHandle(), leak.get("handle").asText(), at);
            assertEquals(v.api(), leak.get("api").asText(), at);
            assertEquals(v.thread(), leak.get("thread").asText(), at);
            assertEquals(Instant.ofEpochMilli(v.createdAtMillis()).toString(), leak.get("createdAt").asText(), at);
            assertEquals(StackFrames.format(v.creation()).get(0), leak.get("stack").get(0).asText(), at);
            assertEquals(v.details().get("stream"), leak.get("details").get("stream").asText(), at);
            assertEquals(v.details().get("device"), leak.get("details").get("device").asInt(), at);
            assertEquals(pending.containsKey(v), leak.get("details").has("stillPending"), at);
            if (pending.containsKey(v)) {
                assertEquals(pending.get(v), leak.get("details").get("stillPending").asBoolean(), at);
            }
            assertEquals(cleanup.get(v).outcome().word(), leak.get("cleanup").asText(), at);
            assertEquals(cleanup.get(v).note(), leak.has("cleanupNote") ? leak.get("cleanupNote").asText() : null, at);
        }
    }

    @Test
    void outputIsPrettyPrintedAndEndsWithANewline() throws CharacterCodingException {
        String json = JsonReportWriter.toJson(sample());

        assertTrue(json.startsWith("{\n  \"schema\": \"ncclguard-report/1\",\n"), json);
        assertTrue(json.contains("\n      \"stack\": [\n        \"com.example.Train.setup(Train.java:10)\",\n"), json);
        assertTrue(json.endsWith("\n}\n"), json);
    }

    private static JsonNode leakOf(long streamHandle) throws IOException {
        HandleView stream = new HandleView(Kind.STREAM, streamHandle, "cudaEventRecord", "jna-interface", "main",
                Views.T0, null, 0, Map.of("pendingOps", 1L, "device", 0), null);
        return parse(Report.builder().leaks(List.of(stream)).build()).get("leaks").get(0);
    }

    @Test
    void defaultStreamsSayWhichDefaultStreamTheyAre() throws IOException {
        assertEquals("legacy", leakOf(0x0).path("defaultStream").asText());
        assertEquals("legacy", leakOf(0x1).path("defaultStream").asText());
        assertEquals("per-thread", leakOf(0x2).path("defaultStream").asText());
    }

    @Test
    void aCreatedStreamHasNoDefaultStreamField() throws IOException {
        assertFalse(leakOf(0x3).has("defaultStream"));
    }
}
