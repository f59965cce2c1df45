package dev.ncclguard.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.sun.jna.Native;
import dev.ncclguard.it.apps.MappedNamesApp;
import dev.ncclguard.it.apps.NoGpuApp;
import dev.ncclguard.it.apps.RawFunctionApp;
import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The host application comes first: bad input, exit status, and JVMs that never use NCCL. */
class AgentSafetyIT {
    @TempDir
    Path dir;

    static String testClasspath() throws Exception {
        Path classes = Path.of(RawFunctionApp.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        Path jna = Path.of(Native.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        return classes + File.pathSeparator + jna;
    }

    private ChildJvm raw(String options) throws Exception {
        return ChildJvm.sample().agent(options).mainClass(testClasspath(), RawFunctionApp.class.getName());
    }

    @Test
    void badOptionStopsTheJvmWithOneLineNamingKeyValueAndChoices() throws Exception {
        ChildJvm.Result r = ChildJvm.sample().agent("stacks=sometimes")
                .mainClass(testClasspath(), NoGpuApp.class.getName()).run();
        assertEquals(1, r.exitCode(), r.describe());
        assertFalse(r.stdout().contains("hello"), "main must not run: " + r.describe());
        List<String> lines = r.stderr().lines().filter(l -> !l.isBlank()).toList();
        assertEquals(1, lines.size(), r.describe());
        assertTrue(lines.get(0).contains("stacks") && lines.get(0).contains("sometimes")
                && lines.get(0).contains("on") && lines.get(0).contains("off"), lines.get(0));
    }

    @Test
    void unknownOptionStopsTheJvmWithOneLine() throws Exception {
        ChildJvm.Result r = ChildJvm.sample().agent("stack=on")
                .mainClass(testClasspath(), NoGpuApp.class.getName()).run();
        assertEquals(1, r.exitCode(), r.describe());
        assertEquals(1, r.stderr().lines().filter(l -> !l.isBlank()).count(), r.describe());
        assertTrue(r.stderr().contains("stack"), r.describe());
    }

    @Test
    void jvmThatNeverTouchesNcclRunsAsBeforeAndPrintsNothing() throws Exception {
        ChildJvm.Result r = ChildJvm.sample().agent("")
                .mainClass(testClasspath(), NoGpuApp.class.getName()).run();
        assertEquals(0, r.exitCode(), r.describe());
        assertEquals("hello", r.stdout().strip());
        assertEquals("", r.stderr().strip(), r.describe());
    }

    @Test
    void rawFunctionCallsAreTracked() throws Exception {
        Path report = dir.resolve("raw.json");
        ChildJvm.Result r = raw("report=" + report).run("return");
        assertEquals(0, r.exitCode(), r.describe());
        JsonNode json = Reports.read(report);
        List<JsonNode> events = Reports.leaks(json, "event");
        assertEquals(1, events.size(), json.toString());
        assertEquals("cudaEventCreate", events.get(0).path("api").asText());
        assertTrue(events.get(0).path("stack").path(0).asText().startsWith(RawFunctionApp.class.getName() + ".main"),
                events.get(0).toString());
        assertEquals(1, Reports.leaks(json, "stream").size(), json.toString());
    }

    @Test
    void bindingWithAFunctionMapperIsTrackedByItsCNames() throws Exception {
        Path report = dir.resolve("mapped.json");
        ChildJvm.Result r = ChildJvm.sample().agent("report=" + report)
                .mainClass(testClasspath(), MappedNamesApp.class.getName()).run();
        assertEquals(0, r.exitCode(), r.describe());
        List<JsonNode> events = Reports.leaks(Reports.read(report), "event");
        assertEquals(1, events.size(), r.describe());
        assertEquals("cudaEventCreate", events.get(0).path("api").asText());
        assertTrue(events.get(0).path("stack").path(0).asText().startsWith(MappedNamesApp.class.getName() + ".main"),
                events.get(0).toString());
    }

    @Test
    void exitCodeReplacesOnlyAZeroExit() throws Exception {
        assertEquals(3, raw("exit-code=3,text=none").run("return").exitCode());
        assertEquals(3, raw("exit-code=3,text=none").run("exit:0").exitCode());
        assertEquals(3, raw("exit-code=3,text=none").run("thread-exit:0").exitCode());
        assertEquals(1, raw("exit-code=3,text=none").run("exit:1").exitCode());
        assertEquals(1, raw("exit-code=3,text=none").run("throw").exitCode());
        assertEquals(0, raw("text=none").run("return").exitCode());
    }

    @Test
    void unwritableReportPathIsOneClearLineAndTheApplicationExitsAsItWould() throws Exception {
        Path notADirectory = Files.writeString(dir.resolve("a-file"), "x");
        Path missing = notADirectory.resolve("r.json");
        ChildJvm.Result r = raw("report=" + missing + ",text=none").run("return");
        assertEquals(0, r.exitCode(), r.describe());
        try (var left = Files.list(dir)) {
            assertEquals(List.of(notADirectory), left.toList(), "no temp file may be left behind");
        }
        List<String> lines = r.stderr().lines().filter(l -> l.startsWith("ncclguard:")).toList();
        assertEquals(1, lines.size(), r.describe());
        assertTrue(lines.get(0).contains(missing.toString()), lines.get(0));
    }
}
