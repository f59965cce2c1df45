package dev.ncclguard.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.ncclguard.testkit.ChildJvm;
import dev.ncclguard.testkit.Output;
import dev.ncclguard.testkit.ReportJson;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Output names and the config file in a real JVM: %{NAME} and %n, as two processes of one rank
 * (pid 1 in containers is the same story) write their reports into one directory; %t; a config
 * file whose report path holds a comma, which the argument string cannot carry.
 */
class OutputNamesIT {
    @TempDir
    Path dir;

    private Output leakyRank(String options) throws Exception {
        return ChildJvm.sample().agent(options).env("RANK", "3").run("leaky", "--ranks", "1", "--iters", "1");
    }

    @Test
    void twoRunsOfOneRankWriteTwoReportsAndTheirTextTakesTheSameNumbers() throws Exception {
        String options = "report=" + dir + "/rank-%{RANK}-%n.json,text=" + dir + "/rank-%{RANK}-%n.txt";
        Output first = leakyRank(options);
        Output second = leakyRank(options);
        assertEquals(0, first.exitCode(), first.describe());
        assertEquals(0, second.exitCode(), second.describe());
        JsonNode r0 = ReportJson.read(dir.resolve("rank-3-0.json"));
        JsonNode r1 = ReportJson.read(dir.resolve("rank-3-1.json"));
        assertTrue(r0.get("pid").asLong() != r1.get("pid").asLong(), "one process wrote both");
        assertTrue(Files.readString(dir.resolve("rank-3-0.txt")).contains("pid " + r0.get("pid").asLong()));
        assertTrue(Files.readString(dir.resolve("rank-3-1.txt")).contains("pid " + r1.get("pid").asLong()));
        assertFalse(Files.exists(dir.resolve("rank-3-2.json")));
    }

    @Test
    void startTimeIsTheReportsStartedAtInUtc() throws Exception {
        Output r = leakyRank("text=none,report=" + dir + "/at-%t.json");
        assertEquals(0, r.exitCode(), r.describe());
        try (var files = Files.list(dir)) {
            Path report = files.filter(p -> p.getFileName().toString().startsWith("at-")).findFirst().orElseThrow();
            JsonNode json = ReportJson.read(report);
            String stamp = DateTimeFormatter.ofPattern("yyyyMMdd'T'HHmmss'Z'").withZone(ZoneOffset.UTC)
                    .format(Instant.parse(json.get("startedAt").asText()));
            assertEquals("at-" + stamp + ".json", report.getFileName().toString());
        }
    }

    @Test
    void aConfigFileCarriesAReportPathWithACommaAndTheArgumentsStillWin() throws Exception {
        Path config = dir.resolve("ncclguard.properties");
        Path commaDir = dir.resolve("a,b");
        Files.writeString(config, "report=" + commaDir + "/r.json\ntext=none\nexit-code=3\n");
        Output r = leakyRank("config=" + config + ",exit-code=5");
        assertEquals(5, r.exitCode(), r.describe());
        assertEquals(1, ReportJson.summary(ReportJson.read(commaDir.resolve("r.json")), "leakedComms"));
    }

    @Test
    void aConfigFileNamedByTheEnvironmentIsRead() throws Exception {
        Path config = dir.resolve("env.properties");
        Files.writeString(config, "report=" + dir + "/env.json\ntext=none\n");
        Output r = ChildJvm.sample().agent("").env("NCCLGUARD_CONFIG", config.toString())
                .run("leaky", "--ranks", "1", "--iters", "1");
        assertEquals(0, r.exitCode(), r.describe());
        assertEquals(1, ReportJson.summary(ReportJson.read(dir.resolve("env.json")), "leakedComms"));
    }

    @Test
    void aBadConfigFileStopsTheJvmWithOneLine() throws Exception {
        Path config = dir.resolve("bad.properties");
        Files.writeString(config, "stacks=sometimes\n");
        Output r = leakyRank("config=" + config);
        assertTrue(r.exitCode() != 0, r.describe());
        assertTrue(r.stderr().contains("ncclguard: invalid value 'sometimes' for option stacks (config file " + config
                + "): expected on or off"), r.describe());
    }
}
