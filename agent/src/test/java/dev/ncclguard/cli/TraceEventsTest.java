package dev.ncclguard.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import dev.ncclguard.testkit.ReportJson;
import dev.ncclguard.testkit.SchemaCheck;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * merge --trace against the rules of the Trace Event Format (the JSON Object Format that
 * chrome://tracing and Perfetto read): what every event must hold, per phase.
 */
class TraceEventsTest {
    private static final String ID = "9a87a0bcadf6c8e0";
    private static final Set<String> PHASES = Set.of("X", "i", "I", "M");
    private static final Set<String> METADATA = Set.of("process_name", "process_sort_index", "thread_name",
            "thread_sort_index", "process_labels");
    /** trace-viewer's reserved colour names, the only values cname may take. */
    private static final Set<String> COLORS = Set.of("thread_state_uninterruptible", "thread_state_iowait",
            "thread_state_running", "thread_state_runnable", "thread_state_sleeping", "thread_state_unknown",
            "background_memory_dump", "light_memory_dump", "detailed_memory_dump", "vsync_highlight_color",
            "generic_work", "good", "bad", "terrible", "black", "grey", "white", "yellow", "olive", "rail_response",
            "rail_animation", "rail_idle", "rail_load", "startup", "heap_dump_stack_frame", "heap_dump_object_type",
            "heap_dump_child_node_arrow", "cq_build_running", "cq_build_passed", "cq_build_failed",
            "cq_build_abandoned", "cq_build_attempt_runnig", "cq_build_attempt_passed", "cq_build_attempt_failed");

    @TempDir
    Path dir;

    private JsonNode trace(String... reports) throws Exception {
        Path file = dir.resolve("job.trace.json");
        String[] args = new String[reports.length + 3];
        args[0] = "merge";
        System.arraycopy(reports, 0, args, 1, reports.length);
        args[reports.length + 1] = "--trace";
        args[reports.length + 2] = file.toString();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        Cli.run(args, new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        assertEquals("", err.toString(StandardCharsets.UTF_8));
        JsonNode root = ReportJson.tree(file);
        followsTheFormat(root);
        return root;
    }

    /** The format's rules, checked on every event. */
    static void followsTheFormat(JsonNode root) {
        assertTrue(root.isObject(), "the JSON Object Format");
        assertTrue(root.path("traceEvents").isArray(), "traceEvents is an array");
        assertTrue(Set.of("ms", "ns").contains(root.path("displayTimeUnit").asText("ms")));
        Map<String, List<long[]>> slicesByTrack = new HashMap<>();
        for (JsonNode e : root.path("traceEvents")) {
            String ph = e.path("ph").asText();
            assertTrue(PHASES.contains(ph), "a phase this trace uses: " + e);
            assertTrue(e.path("name").isTextual(), "a name: " + e);
            assertTrue(e.path("pid").isIntegralNumber() && e.path("tid").isIntegralNumber(), "integer pid and tid: " + e);
            assertTrue(e.path("ts").isNumber() && e.path("ts").asDouble() >= 0, "a time in microseconds: " + e);
            if (e.has("args")) {
                assertTrue(e.path("args").isObject(), "args is an object: " + e);
            }
            if (e.has("cname")) {
                assertTrue(COLORS.contains(e.path("cname").asText()), "a reserved colour name: " + e);
            }
            switch (ph) {
                case "X" -> {
                    assertTrue(e.path("dur").isNumber() && e.path("dur").asDouble() >= 0, "a duration: " + e);
                    slicesByTrack.computeIfAbsent(e.path("pid").asLong() + "/" + e.path("tid").asLong(),
                            k -> new ArrayList<>()).add(new long[] {e.path("ts").asLong(),
                                e.path("ts").asLong() + e.path("dur").asLong()});
                }
                case "i", "I" -> assertTrue(Set.of("g", "p", "t").contains(e.path("s").asText("t")), "a scope: " + e);
                case "M" -> {
                    assertTrue(METADATA.contains(e.path("name").asText()), "a metadata name: " + e);
                    assertTrue(e.path("args").has("name") || e.path("args").has("sort_index")
                            || e.path("args").has("labels"), "metadata args: " + e);
                }
                default -> fail(ph);
            }
        }
        // the slices of one track nest or follow each other: overlapping ones are drawn wrong
        slicesByTrack.forEach((track, slices) -> {
            for (long[] a : slices) {
                for (long[] b : slices) {
                    boolean overlap = a[0] < b[1] && b[0] < a[1];
                    boolean nested = (a[0] <= b[0] && b[1] <= a[1]) || (b[0] <= a[0] && a[1] <= b[1]);
                    assertTrue(!overlap || nested, "slices on track " + track + " overlap without nesting");
                }
            }
        });
    }

    private static List<JsonNode> events(JsonNode root, String ph, String name) {
        List<JsonNode> out = new ArrayList<>();
        for (JsonNode e : root.path("traceEvents")) {
            if (e.path("ph").asText().equals(ph) && (name == null || e.path("name").asText().equals(name))) {
                out.add(e);
            }
        }
        return out;
    }

    @Test
    void aProcessPerPidATrackPerRankAndASlicePerCommunicatorColouredByHowItEnded() throws Exception {
        TestReports.process(101, "node-a").comm(ID, 0, 2, 0x10, 100, 900).write(dir, "rank-0.json");
        TestReports.process(102, "node-a").comm(ID, 1, 2, 0x20, 120, 0).write(dir, "rank-1.json");
        JsonNode root = trace(dir.resolve("rank-0.json").toString(), dir.resolve("rank-1.json").toString());
        List<JsonNode> processes = events(root, "M", "process_name");
        assertEquals(2, processes.size());
        assertEquals(101, processes.get(0).path("pid").asInt());
        assertEquals("pid 101 on node-a (rank-0.json)", processes.get(0).path("args").path("name").asText());
        List<JsonNode> slices = events(root, "X", "communicator " + ID);
        assertEquals(2, slices.size());
        JsonNode released = slices.get(0);
        assertEquals(100_000, released.path("ts").asLong());
        assertEquals(800_000, released.path("dur").asLong());
        assertEquals("good", released.path("cname").asText());
        JsonNode leaked = slices.get(1);
        assertEquals(102, leaked.path("pid").asInt());
        assertEquals("terrible", leaked.path("cname").asText());
        assertEquals(10_000_000 - 120_000, leaked.path("dur").asLong(), "alive until its process's exit");
        assertEquals("com.example.Trainer.init(Trainer.java:42)", leaked.path("args").path("stack").get(0).asText());
        Set<String> tracks = new HashSet<>();
        for (JsonNode t : events(root, "M", "thread_name")) {
            tracks.add(t.path("pid").asInt() + ": " + t.path("args").path("name").asText());
        }
        assertEquals(Set.of("101: rank 0", "102: rank 1"), tracks);
        List<JsonNode> exits = events(root, "i", "exit (report written)");
        assertEquals(2, exits.size());
        assertEquals("p", exits.get(0).path("s").asText());
        assertEquals(10_000_000, exits.get(0).path("ts").asLong());
    }

    @Test
    void overlappingCommunicatorsOfOneRankGoOnTracksOfTheirOwn() throws Exception {
        TestReports.process(101, "a").comm("00000000000000a1", 0, 1, 0x10, 100, 900)
                .comm("00000000000000a2", 0, 1, 0x11, 500, 1500).comm("00000000000000a3", 0, 1, 0x12, 1600, 1700)
                .write(dir, "r.json");
        JsonNode root = trace(dir.resolve("r.json").toString());
        Set<String> names = new HashSet<>();
        events(root, "M", "thread_name").forEach(t -> names.add(t.path("args").path("name").asText()));
        assertEquals(Set.of("rank 0", "rank 0 (2)"), names);
    }

    @Test
    void theDestroyIsNestedInItsSliceAndRanksWithoutAReportHaveTracksOfTheirOwn() throws Exception {
        Path r0 = TestReports.process(101, "a").comm(ID, 0, 2, 0x10, 100, 5900).write(dir, "r0.json");
        TestReports.releaseStartedAt(r0, 0x10, 700);
        JsonNode root = trace(r0.toString());
        JsonNode destroy = events(root, "X", "ncclCommDestroy").get(0);
        assertEquals(700_000, destroy.path("ts").asLong());
        assertEquals(5_200_000, destroy.path("dur").asLong());
        JsonNode missing = events(root, "X", "communicator " + ID + " (no report)").get(0);
        assertEquals("grey", missing.path("cname").asText());
        assertEquals(1, missing.path("args").path("rank").asInt());
        assertEquals("ranks without a report", events(root, "M", "process_name").get(1).path("args").path("name").asText());
    }

    @Test
    void cleanupAtExitIsAnInstantOnItsTrack() throws Exception {
        Path r = TestReports.process(101, "a").comm(ID, 0, 1, 0x10, 100, 0).write(dir, "r.json");
        String json = java.nio.file.Files.readString(r).replace("\"cleanup\": \"none\"", "\"cleanup\": \"destroyed\"")
                .replace("\"action\": \"report\"", "\"action\": \"cleanup\"");
        java.nio.file.Files.writeString(r, json);
        SchemaCheck.assertValid(r);
        JsonNode root = trace(r.toString());
        JsonNode cleanup = events(root, "i", "cleanup: destroyed").get(0);
        assertEquals("t", cleanup.path("s").asText());
        assertEquals(10_000_000, cleanup.path("ts").asLong());
    }

    @Test
    void pidsThatRepeatAcrossHostsAreKeptApart() throws Exception {
        TestReports.process(1, "container-a").comm(ID, 0, 2, 0x10, 100, 900).write(dir, "a.json");
        TestReports.process(1, "container-b").comm(ID, 1, 2, 0x20, 100, 900).write(dir, "b.json");
        JsonNode root = trace(dir.resolve("a.json").toString(), dir.resolve("b.json").toString());
        List<JsonNode> processes = events(root, "M", "process_name");
        assertEquals(2, processes.size());
        assertTrue(processes.get(0).path("pid").asInt() != processes.get(1).path("pid").asInt(), processes.toString());
    }
}
