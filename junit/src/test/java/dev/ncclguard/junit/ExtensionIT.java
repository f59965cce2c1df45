package dev.ncclguard.junit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The extension on a suite of its own (dev.ncclguard.junit.cases), run by the JUnit Platform
 * Launcher in a child JVM against the emulator: with the agent (-javaagent, as Surefire's argLine
 * gives it), without it, and without it when it is optional.
 * Its child runner is its own, not agent's testkit.ChildJvm: the child's class path is this JVM's,
 * which holds neither the agent nor (as the agent's test-jar would bring) the agent's test classes.
 */
class ExtensionIT {
    private static final Path AGENT_JAR = Path.of(System.getProperty("ncclguard.test.agentJar"));
    private static final Path EMU = Path.of(System.getProperty("ncclguard.test.emu"));

    /** One test's or class's outcome in the child: status and failure message. */
    private record Outcome(String status, String message) {
    }

    @TempDir
    static Path dir;
    static Map<String, Outcome> withAgent;
    static String withAgentErr;

    @BeforeAll
    static void runTheSuiteUnderTheAgent() throws Exception {
        assertTrue(Files.isRegularFile(AGENT_JAR), "no agent jar at " + AGENT_JAR + ": build the agent module first");
        assertTrue(Files.isRegularFile(EMU.resolve("libnccl.so.2")), "the emulator is not built at " + EMU);
        Child c = suite(true, "with-agent", "junit.jupiter.extensions.autodetection.enabled=true",
                "LeakyCases", "ClassLevelCases", "AutoDetectedCases");
        withAgent = c.outcomes();
        withAgentErr = c.stderr();
    }

    @Test
    void testThatLeavesACommunicatorFailsWithItsReport() {
        Outcome o = withAgent.get("LeakyCases.leavesACommunicator");
        assertEquals("FAILED", o.status(), withAgent.toString());
        String m = o.message();
        assertTrue(m.startsWith("ncclguard: leavesACommunicator() left 1 communicator behind:\n\nLeaked communicator 0x"), m);
        assertTrue(m.contains("created by ncclCommInitAll, never destroyed or aborted"), m);
        assertTrue(m.contains("    at dev.ncclguard.junit.cases.Gpu.communicator(Gpu.java:"), m);
        assertTrue(m.contains("    at dev.ncclguard.junit.cases.LeakyCases.leavesACommunicator(LeakyCases.java:"), m);
        assertTrue(m.contains("What to do: destroy it with ncclCommDestroy"), m);
        assertTrue(m.matches("(?s).*\\(LeakyCases\\.java:\\d+\\)\n    \\.\\.\\. \\(JUnit\\)\n  What to do: .*"), m);
        assertFalse(m.contains("at org.junit."), "JUnit's frames cut: " + m);
    }

    @Test
    void testThatLeavesAPendingEventFailsWithItsReport() {
        Outcome o = withAgent.get("LeakyCases.leavesAPendingEvent");
        assertEquals("FAILED", o.status(), withAgent.toString());
        assertTrue(o.message().startsWith("ncclguard: leavesAPendingEvent() left 1 pending event, 1 unsynchronized "
                + "stream behind:"), o.message());
        assertTrue(o.message().contains("Pending event 0x"), o.message());
        assertTrue(o.message().contains("at dev.ncclguard.junit.cases.LeakyCases.leavesAPendingEvent(LeakyCases.java:"),
                o.message());
        assertTrue(o.message().contains("Unsynchronized stream 0x"), o.message());
    }

    @Test
    void cleanTestsPassIncludingOneThatReleasesInAfterEach() {
        assertEquals(new Outcome("SUCCESSFUL", ""), withAgent.get("LeakyCases.releasesEverything"), withAgent.toString());
        assertEquals(new Outcome("SUCCESSFUL", ""), withAgent.get("LeakyCases.releasesInAfterEach"), withAgent.toString());
    }

    @Test
    void communicatorOfBeforeAllFailsTheClassNotItsTest() {
        assertEquals("SUCCESSFUL", withAgent.get("ClassLevelCases.runsWhileTheSharedCommunicatorLives").status());
        Outcome o = withAgent.get("ClassLevelCases");
        assertEquals("FAILED", o.status(), withAgent.toString());
        assertTrue(o.message().startsWith("ncclguard: ClassLevelCases (its @BeforeAll, @AfterAll and fields) left 1 "
                + "communicator behind:"), o.message());
        assertTrue(o.message().contains("at dev.ncclguard.junit.cases.ClassLevelCases.joinOnce(ClassLevelCases.java:"),
                o.message());
    }

    @Test
    void classWhoseTestsLeakIsNotBlamedAgain() {
        assertEquals(new Outcome("SUCCESSFUL", ""), withAgent.get("LeakyCases"), withAgent.toString());
    }

    @Test
    void autoDetectedExtensionChecksAClassWithoutExtendWith() {
        Outcome o = withAgent.get("AutoDetectedCases.leavesACommunicatorUnannotated");
        assertEquals("FAILED", o.status(), withAgent.toString());
        assertTrue(o.message().contains("AutoDetectedCases.leavesACommunicatorUnannotated(AutoDetectedCases.java:"),
                o.message());
    }

    @Test
    void withoutTheAgentTheClassFailsSayingHowToEnableIt() throws Exception {
        Map<String, Outcome> out = suite(false, "no-agent", "LeakyCases").outcomes();
        Outcome o = out.get("LeakyCases");
        assertEquals("FAILED", o.status(), out.toString());
        assertTrue(o.message().startsWith("ncclguard: the ncclguard agent is not running in this JVM, so "
                + "NcclGuardExtension cannot see NCCL and CUDA handles. Start the test JVM with "
                + "-javaagent:/path/to/ncclguard-agent.jar (Maven Surefire: <argLine>"), o.message());
        assertFalse(out.containsKey("LeakyCases.releasesEverything"), "no test runs: " + out);
    }

    @Test
    void withoutTheAgentButOptionalItWarnsOnceAndChecksNothing() throws Exception {
        Child c = suite(false, "optional", NcclGuardExtension.AGENT_PARAMETER + "=optional", "LeakyCases");
        assertEquals("SUCCESSFUL", c.outcomes().get("LeakyCases.leavesACommunicator").status(), c.outcomes().toString());
        assertEquals(1, c.stderr().lines().filter(l -> l.startsWith("ncclguard: WARNING: the ncclguard agent is not "
                + "running in this JVM")).count(), c.stderr());
    }

    // --- the child JVM ---

    private record Child(Map<String, Outcome> outcomes, String stderr) {
    }

    private static Child suite(boolean agent, String name, String... args) throws Exception {
        Path results = dir.resolve(name + ".tsv");
        Path err = dir.resolve(name + ".err");
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        if (agent) {
            cmd.add("-javaagent:" + AGENT_JAR + "=text=none");
        }
        cmd.add("-Dncclguard.emu=" + EMU);
        cmd.add("-cp");
        cmd.add(testClasspath());
        cmd.add("dev.ncclguard.junit.cases.SuiteRunner");
        cmd.add(results.toString());
        cmd.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(false)
                .redirectOutput(dir.resolve(name + ".out").toFile()).redirectError(err.toFile());
        pb.environment().keySet().removeIf(k -> k.startsWith("NCCLGUARD_") || k.startsWith("NCCLEMU_"));
        Process p = pb.start();
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.destroyForcibly().waitFor();
            fail("the inner suite did not finish: " + Files.readString(err));
        }
        String stderr = Files.readString(err);
        assertEquals(0, p.exitValue(), stderr);
        Map<String, Outcome> outcomes = new LinkedHashMap<>();
        for (String line : Files.readAllLines(results, StandardCharsets.UTF_8)) {
            String[] f = line.split("\t", 3);
            outcomes.put(f[0], new Outcome(f[1], f.length > 2 ? unescape(f[2]) : ""));
        }
        return new Child(outcomes, stderr);
    }

    private static String unescape(String text) {
        StringBuilder out = new StringBuilder(text.length());
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c == '\\' && i + 1 < text.length()) {
                char n = text.charAt(++i);
                out.append(n == 'n' ? '\n' : n);
            } else {
                out.append(c);
            }
        }
        return out.toString();
    }

    /** This JVM's test class path (Failsafe's), which holds the extension, the cases and JUnit; not the agent. */
    private static String testClasspath() {
        String cp = System.getProperty("java.class.path");
        for (String entry : cp.split(File.pathSeparator)) {
            Path name = Path.of(entry).getFileName();
            assertFalse(name != null && name.toString().startsWith("ncclguard-agent"),
                    "the agent must come by -javaagent only: " + entry);
        }
        return cp;
    }
}
