package dev.ncclguard.testkit;

import static org.junit.jupiter.api.Assertions.fail;

import com.networknt.schema.Error;
import com.networknt.schema.InputFormat;
import com.networknt.schema.Schema;
import com.networknt.schema.SchemaRegistry;
import com.networknt.schema.SpecificationVersion;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * The JSON Schema of ncclguard-report/1 as published (docs/schema/ncclguard-report-1.schema.json),
 * which every report a test makes is checked against: unit tests' reports, the golden files, and
 * the reports of the integration tests' child JVMs. Checked with networknt's validator, not the
 * agent's code: main's {@code json.ReportSchema} holds the schema's name and summary fields that
 * the agent writes, this class the published file a report must follow.
 */
public final class SchemaCheck {
    public static final String FILE = "docs/schema/ncclguard-report-1.schema.json";
    private static Schema schema;

    private SchemaCheck() {
    }

    /** The schema file in the repository. */
    public static Path file() {
        return Repository.file(FILE);
    }

    private static synchronized Schema schema() {
        if (schema == null) {
            try (InputStream in = Files.newInputStream(file())) {
                schema = SchemaRegistry.withDefaultDialect(SpecificationVersion.DRAFT_2020_12).getSchema(in);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
        return schema;
    }

    /** What the schema finds wrong with the report; empty when it is valid. */
    public static List<String> errors(String json) {
        return schema().validate(json, InputFormat.JSON).stream().map(Error::toString).toList();
    }

    /** Fails the test when the report does not follow the schema. */
    public static void assertValid(String json, Object where) {
        List<String> errors = errors(json);
        if (!errors.isEmpty()) {
            fail("the report " + where + " does not follow " + FILE + ": " + errors);
        }
    }

    public static void assertValid(Path report) throws IOException {
        assertValid(Files.readString(report, StandardCharsets.UTF_8), report);
    }
}
