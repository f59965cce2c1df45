package dev.ncclguard.testkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Reads the agent's JSON report with Jackson, a parser independent of the agent's own
 * (json.JsonReader), so a fault of the agent's writer and reader together cannot pass unseen;
 * every report read is checked against the published schema ({@link SchemaCheck}) first.
 */
public final class ReportJson {
    /** Strict: duplicate keys and trailing tokens are errors, as for the strictest consumer. */
    private static final ObjectMapper JSON = JsonMapper.builder()
            .enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION)
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .build();

    private ReportJson() {
    }

    /** Reads a report a child JVM wrote, after checking it against the published JSON Schema. */
    public static JsonNode read(Path path) throws IOException {
        assertTrue(Files.isRegularFile(path), "no report at " + path);
        byte[] bytes = Files.readAllBytes(path);
        JsonNode report = JSON.readTree(bytes);
        assertEquals("ncclguard-report/1", report.path("schema").asText(), "schema of " + path);
        SchemaCheck.assertValid(new String(bytes, StandardCharsets.UTF_8), path);
        return report;
    }

    /** Reads a report of a running JVM (dump --json, JMX), checked against the schema like the others. */
    public static JsonNode parse(String json, Object where) throws IOException {
        SchemaCheck.assertValid(json, where);
        return JSON.readTree(json);
    }

    /** The tree of JSON the agent wrote (a report, a trace, a JMX answer), without the schema check. */
    public static JsonNode tree(String json) throws IOException {
        return JSON.readTree(json);
    }

    public static JsonNode tree(byte[] json) throws IOException {
        return JSON.readTree(json);
    }

    public static JsonNode tree(Path file) throws IOException {
        return JSON.readTree(file.toFile());
    }

    /**
     * Writes {@code root} to {@code file}, indented: a report a test edited (a field the agent writes
     * only in some runs, a report split per rank), for the commands that read reports.
     */
    public static void write(Path file, JsonNode root) throws IOException {
        JSON.writerWithDefaultPrettyPrinter().writeValue(file.toFile(), root);
    }

    public static List<JsonNode> leaks(JsonNode report, String kind) {
        List<JsonNode> found = new ArrayList<>();
        for (JsonNode leak : report.path("leaks")) {
            if (kind.equals(leak.path("kind").asText())) {
                found.add(leak);
            }
        }
        return found;
    }

    public static long summary(JsonNode report, String field) {
        JsonNode value = report.path("summary").path(field);
        assertTrue(value.isNumber(), "summary." + field + " missing in " + report);
        return value.asLong();
    }

    /** The emulator's list of handles still alive at its exit (NCCLEMU_REPORT), a line each. */
    public static List<String> aliveAtExit(Path emulatorReport) throws IOException {
        assertTrue(Files.isRegularFile(emulatorReport), "the emulator wrote no exit report at " + emulatorReport);
        List<String> alive = new ArrayList<>();
        for (String line : Files.readAllLines(emulatorReport)) {
            if (!line.isBlank()) {
                alive.add(line);
            }
        }
        return alive;
    }
}
