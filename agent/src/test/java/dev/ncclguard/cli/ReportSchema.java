package dev.ncclguard.cli;

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
 * the reports of the integration tests' child JVMs.
 */
public final class ReportSchema {
    static final String FILE = "docs/schema/ncclguard-report-1.schema.json";
    private static Schema schema;

    private ReportSchema() {
    }

    /** The schema file in the repository: found from the test's working directory or one above it. */
    static Path file() {
        return repositoryFile(FILE);
    }

    /** A file of the repository, found from the test's working directory or one above it. */
    public static Path repositoryFile(String file) {
        for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
            Path p = dir.resolve(file);
            if (Files.isRegularFile(p)) {
                return p;
            }
        }
        throw new IllegalStateException("no " + file + " from " + Path.of("").toAbsolutePath());
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
