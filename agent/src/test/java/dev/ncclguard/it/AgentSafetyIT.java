package dev.ncclguard.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.sun.jna.Native;
import dev.ncclguard.it.apps.MappedNamesApp;
import dev.ncclguard.it.apps.NoGpuApp;
import dev.ncclguard.it.apps.RawFunctionApp;
import dev.ncclguard.testkit.ChildJvm;
import dev.ncclguard.testkit.Output;
import dev.ncclguard.testkit.ReportJson;
import dev.ncclguard.testkit.Repository;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The host application comes first: bad input, exit status, and JVMs that never use NCCL. */
class AgentSafetyIT {
    @TempDir
    Path dir;

    /** The test's apps and JNA, the class path of an application that calls NCCL through JNA. */
    static String testClasspath() {
        return Repository.classpathOf(RawFunctionApp.class, Native.class);
    }

    private ChildJvm raw(String options) throws Exception {
        return ChildJvm.sample().agent(options).mainClass(testClasspath(), RawFunctionApp.class.getName());
    }

    @Test
    void badOptionStopsTheJvmWithOneLineNamingKeyValueAndChoices() throws Exception {
        Output r = ChildJvm.sample().agent("stacks=sometimes")
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
        Output r = ChildJvm.sample().agent("stack=on")
                .mainClass(testClasspath(), NoGpuApp.class.getName()).run();
        assertEquals(1, r.exitCode(), r.describe());
        assertEquals(1, r.stderr().lines().filter(l -> !l.isBlank()).count(), r.describe());
        assertTrue(r.stderr().contains("stack"), r.describe());
    }

    @Test
    void jvmThatNeverTouchesNcclRunsAsBeforeAndPrintsNothing() throws Exception {
        Output r = ChildJvm.sample().agent("")
                .mainClass(testClasspath(), NoGpuApp.class.getName()).run();
        assertEquals(0, r.exitCode(), r.describe());
        assertEquals("hello", r.stdout().strip());
        assertEquals("", r.stderr().strip(), r.describe());
    }

    @Test
    void rawFunctionCallsAreTracked() throws Exception {
        Path report = dir.resolve("raw.json");
        Output r = raw("report=" + report).run("return");
        assertEquals(0, r.exitCode(), r.describe());
        JsonNode json = ReportJson.read(report);
        List<JsonNode> events = ReportJson.leaks(json, "event");
        assertEquals(1, events.size(), json.toString());
        assertEquals("cudaEventCreate", events.get(0).path("api").asText());
        assertTrue(events.get(0).path("stack").path(0).asText().startsWith(RawFunctionApp.class.getName() + ".main"),
                events.get(0).toString());
        assertEquals(1, ReportJson.leaks(json, "stream").size(), json.toString());
    }

    @Test
    void bindingWithAFunctionMapperIsTrackedByItsCNames() throws Exception {
        Path report = dir.resolve("mapped.json");
        Output r = ChildJvm.sample().agent("report=" + report)
                .mainClass(testClasspath(), MappedNamesApp.class.getName()).run();
        assertEquals(0, r.exitCode(), r.describe());
        List<JsonNode> events = ReportJson.leaks(ReportJson.read(report), "event");
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

    private ChildJvm noGpu(String options) throws Exception {
        return ChildJvm.sample().agent(options).mainClass(testClasspath(), NoGpuApp.class.getName());
    }

    private static List<String> lines(Output r) {
        return r.stderr().lines().filter(l -> !l.isBlank()).toList();
    }

    @Test
    void reportPathThatIsADirectoryStopsTheStartWithOneLine() throws Exception {
        Output r = noGpu("report=" + dir).run();
        assertEquals(1, r.exitCode(), r.describe());
        assertFalse(r.stdout().contains("hello"), "main must not run: " + r.describe());
        assertEquals(List.of("ncclguard: cannot write report to " + dir + ": it is a directory; set report= to a"
                + " writable path"), lines(r), r.describe());
    }

    @Test
    void reportPathsThatOnlyTheExitWouldFindUnwritableStopTheStartWithOneLine() throws Exception {
        String longName = dir + "/" + "r".repeat(300) + ".json";
        String deep = dir + "/a".repeat(5000) + "/r.json";
        for (String path : List.of("/proc/x.json", "/sys/kernel/x.json", longName, deep)) {
            Output r = noGpu("report=" + path).run();
            assertEquals(1, r.exitCode(), r.describe());
            assertFalse(r.stdout().contains("hello"), "main must not run: " + r.describe());
            assertEquals(1, lines(r).size(), r.describe());
            assertTrue(lines(r).get(0).startsWith("ncclguard: cannot write report to " + path + ": ")
                    && lines(r).get(0).endsWith("; set report= to a writable path"), r.describe());
        }
    }

    @Test
    void reportUnderAFileStopsTheStartWithOneLine() throws Exception {
        Path notADirectory = Files.writeString(dir.resolve("a-file"), "x");
        Output r = raw("report=" + notADirectory.resolve("r.json") + ",text=none").run("return");
        assertEquals(1, r.exitCode(), r.describe());
        assertEquals(1, lines(r).size(), r.describe());
        assertTrue(lines(r).get(0).contains(notADirectory + " is not a directory"), r.describe());
        try (var left = Files.list(dir)) {
            assertEquals(List.of(notADirectory), left.toList(), "nothing may be created");
        }
    }

    @Test
    void theSamePathForReportAndTextStopsTheStartWithOneLine() throws Exception {
        Path same = dir.resolve("out");
        Output r = noGpu("report=" + same + ",text=" + same).run();
        assertEquals(1, r.exitCode(), r.describe());
        assertEquals(1, lines(r).size(), r.describe());
        assertTrue(lines(r).get(0).contains("report= and text= name the same file"), r.describe());
    }

    @Test
    void timeoutOutOfRangeStopsTheStartWithOneLine() throws Exception {
        Output r = noGpu("timeout=3000000h").run();
        assertEquals(1, r.exitCode(), r.describe());
        assertEquals(List.of("ncclguard: invalid value '3000000h' for option timeout: expected a duration from 1ms"
                + " to 24h such as 500ms, 10s or 2m"), lines(r), r.describe());
    }

    /** A report path that passes the start check and fails at exit: %h names a directory. */
    private Path directoryAtExit() throws Exception {
        String host = Files.readString(Path.of("/proc/sys/kernel/hostname")).strip();
        return Files.createDirectories(dir.resolve(host));
    }

    @Test
    void reportThatFailsAtExitIsOneLineAndTheApplicationExitsAsItWould() throws Exception {
        Path atExit = directoryAtExit();
        Output r = noGpu("report=" + dir.resolve("%h")).run();
        assertEquals(0, r.exitCode(), r.describe());
        assertEquals("hello", r.stdout().strip(), r.describe());
        try (var left = Files.list(dir)) {
            assertEquals(List.of(atExit), left.toList(), "no temp file may be left behind");
        }
        assertEquals(List.of("ncclguard: cannot write report to " + atExit + ": it is a directory; set report= to a"
                + " writable path"), lines(r), r.describe());
    }

    @Test
    void reportThatFailsAtExitFailsTheRunWithExitCode() throws Exception {
        directoryAtExit();
        Output r = noGpu("report=" + dir.resolve("%h") + ",exit-code=3").run();
        assertEquals(3, r.exitCode(), r.describe());
        assertEquals(1, lines(r).size(), r.describe());
    }

    @Test
    void mistypedPropertyIsOneWarningNamingTheClosestKey() throws Exception {
        Output r = noGpu("").jvmArg("-Dncclguard.exitcode=3").run();
        assertEquals(0, r.exitCode(), r.describe());
        assertEquals("hello", r.stdout().strip(), r.describe());
        assertEquals(List.of("ncclguard: system property ncclguard.exitcode is no option and is ignored; did you"
                + " mean ncclguard.exit-code?"), lines(r), r.describe());
    }

    @Test
    void mistypedVariableIsOneWarningNamingTheClosestVariable() throws Exception {
        Output r = noGpu("").env("NCCLGUARD_EXITCODE", "3").run();
        assertEquals(0, r.exitCode(), r.describe());
        assertEquals(List.of("ncclguard: environment variable NCCLGUARD_EXITCODE is no option and is ignored; did"
                + " you mean NCCLGUARD_EXIT_CODE?"), lines(r), r.describe());
    }

    @Test
    void textToATerminalIsWrittenThroughIt() throws Exception {
        Path script = Path.of("/usr/bin/script");
        assertTrue(Files.isExecutable(script), "util-linux script(1) makes the pseudo-terminal: " + script);
        String javaBin = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        // the child's stdout and stderr are that terminal too: text=$(tty) must not go through stderr
        String cmd = "exec " + javaBin + " -javaagent:" + ChildJvm.AGENT_JAR + "=text=$(tty) -Dncclguard.emu="
                + ChildJvm.EMU + " -cp '" + testClasspath() + "' " + RawFunctionApp.class.getName() + " return";
        Path typescript = dir.resolve("typescript.txt");
        Process p = new ProcessBuilder(script.toString(), "-q", "-e", "-c", cmd, typescript.toString())
                .redirectErrorStream(true).redirectOutput(dir.resolve("script.out").toFile()).start();
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), "script finished");
        String screen = Files.readString(typescript, StandardCharsets.ISO_8859_1);
        assertEquals(0, p.exitValue(), screen);
        assertTrue(screen.contains("Pending event") && screen.contains("SUMMARY:"), screen);
        assertFalse(screen.contains("cannot write"), screen);
    }
}
