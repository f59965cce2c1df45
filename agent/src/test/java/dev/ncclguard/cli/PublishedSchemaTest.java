package dev.ncclguard.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ncclguard.testkit.SchemaCheck;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The published schema describes what the agent writes, and refuses what no agent writes. */
class PublishedSchemaTest {
    private static String resource(String name) throws IOException {
        try (InputStream in = PublishedSchemaTest.class.getResourceAsStream(name)) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"/golden/report-small.json", "/golden/snapshot-small.json"})
    void theGoldenReportsFollowTheSchema(String name) throws IOException {
        SchemaCheck.assertValid(resource(name), name);
    }

    @Test
    void whatTheAgentsWriterMakesFollowsTheSchema() throws Exception {
        String json = dev.ncclguard.report.JsonReportWriter.toJson(TestReports.process(7, "h")
                .comm("00000000000000aa", 0, 2, 0x10, 100, 900).comm("00000000000000aa", 1, 2, 0x20, 100, 0)
                .event(0x30, 200).build());
        SchemaCheck.assertValid(json, "of the writer");
    }

    @Test
    void theSchemaRefusesReportsNoAgentWrites() throws Exception {
        String good = resource("/golden/report-small.json");
        List<String> wrongKind = SchemaCheck.errors(good.replaceFirst("\"kind\": \"event\"", "\"kind\": \"handle\""));
        assertEquals(1, wrongKind.size(), wrongKind.toString());
        assertTrue(wrongKind.get(0).contains("/leaks/1/kind"), wrongKind.toString());
        assertTrue(!SchemaCheck.errors(good.replace("\"schema\": \"ncclguard-report/1\",", "")).isEmpty());
        assertTrue(!SchemaCheck.errors(good.replaceFirst("\"writtenAt\": \"[^\"]+\"", "\"writtenAt\": \"noon\"")).isEmpty());
        assertTrue(!SchemaCheck.errors(good.replaceFirst("\"releasedBy\": \"ncclCommDestroy\"", "\"releasedBy\": null"))
                .isEmpty(), "a released communicator says how");
    }

    @Test
    void theSchemaRefusesADefaultStreamNoAgentNames() throws Exception {
        String good = resource("/golden/snapshot-small.json");
        assertTrue(good.contains("\"defaultStream\": \"legacy\""), "the golden report has a default stream");
        List<String> errors = SchemaCheck.errors(good.replace("\"defaultStream\": \"legacy\"", "\"defaultStream\": \"null\""));
        assertEquals(1, errors.size(), errors.toString());
        assertTrue(errors.get(0).contains("defaultStream"), errors.toString());
    }

    @Test
    void theSchemaIsTheFileDocsSpecPublishes() throws IOException {
        String spec = Files.readString(SchemaCheck.file().getParent().getParent().resolve("spec.md"));
        assertTrue(spec.contains("schema/ncclguard-report-1.schema.json"), "docs/spec.md links the schema");
    }
}
