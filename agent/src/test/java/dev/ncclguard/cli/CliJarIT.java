package dev.ncclguard.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.jar.JarFile;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The command line as users run it: {@code java -jar ncclguard-agent.jar ...}, with its shaded picocli. */
class CliJarIT {
    private static final Path AGENT_JAR = Path.of(System.getProperty("ncclguard.test.agentJar", "target/ncclguard-agent.jar"));
    /** As many events as the agent's own 80 MB report of issue 20 holds. */
    private static final int EVENTS = 200_000;

    @TempDir
    static Path dir;
    static Path big;

    private record Run(int status, String out, String err) {
    }

    private static Run java(String... args) throws Exception {
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.addAll(List.of(args));
        Path out = Files.createTempFile(dir, "out", ".txt");
        Path err = Files.createTempFile(dir, "err", ".txt");
        Process p = new ProcessBuilder(cmd).redirectOutput(out.toFile()).redirectError(err.toFile()).start();
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.destroyForcibly().waitFor();
            throw new AssertionError("did not end in 120 s: " + cmd);
        }
        return new Run(p.exitValue(), Files.readString(out), Files.readString(err));
    }

    @BeforeAll
    static void aReportOfTwoHundredThousandEvents() throws Exception {
        TestReports r = TestReports.process(77, "gpu-big").comm("00000000000000aa", 0, 1, 0x10, 100, 200);
        for (int i = 0; i < EVENTS; i++) {
            r.event(0x100000L + i, 1000 + i / 100);
        }
        big = r.writeUnvalidated(dir, "big.json"); // too big for the schema validator's tree; the writer is the agent's
        assertTrue(Files.size(big) > 60_000_000, Files.size(big) + " bytes");
    }

    @Test
    void theJarAnswersHelpAndVersionThroughItsShadedParser() throws Exception {
        Run version = java("-jar", AGENT_JAR.toString(), "--version");
        assertEquals(0, version.status(), version.err());
        assertTrue(version.out().startsWith("ncclguard "), version.out());
        for (String command : new String[] {"check", "merge", "explain", "attach", "dump"}) {
            Run help = java("-jar", AGENT_JAR.toString(), command, "--help");
            assertEquals(0, help.status(), command + ": " + help.err());
            assertTrue(help.out().startsWith("Usage: ncclguard " + command), help.out());
        }
        Run bad = java("-jar", AGENT_JAR.toString(), "check");
        assertEquals(2, bad.status());
        assertEquals(1, bad.err().lines().count(), bad.err());
    }

    @Test
    void picocliIsInTheJarOnlyUnderTheShadedPackage() throws Exception {
        try (JarFile jar = new JarFile(AGENT_JAR.toFile())) {
            // the agent's own classes, picocli's among them, lie under inst/ as .classdata (entry.AgentLoader)
            assertFalse(jar.stream().anyMatch(e -> e.getName().contains("picocli/") && !e.getName().startsWith("inst/dev/ncclguard/shaded/picocli/")),
                    "an unrelocated picocli, or one the application's class path could load");
            assertTrue(jar.getEntry("inst/dev/ncclguard/shaded/picocli/CommandLine.classdata") != null);
            assertFalse(jar.stream().anyMatch(e -> e.getName().startsWith("inst/dev/ncclguard/shaded/picocli/AutoComplete")));
        }
    }

    @Test
    void checkOfTheAgentsEightyMegabyteReportRunsInA256MegabyteHeap() throws Exception {
        long start = System.nanoTime();
        Run r = java("-Xmx256m", "-XX:+ExitOnOutOfMemoryError", "-jar", AGENT_JAR.toString(), "check", big.toString());
        long ms = (System.nanoTime() - start) / 1_000_000;
        assertEquals(1, r.status(), r.out() + r.err());
        assertEquals("", r.err());
        assertTrue(r.out().contains("LEAKS " + big + " (pid 77 on gpu-big): " + EVENTS + " pending events"), r.out());
        assertTrue(r.out().contains(", and 199,999 more alike: 0x100001, "), r.out());
        assertTrue(ms < 60_000, ms + " ms");
    }

    @Test
    void mergeOfItRunsInA256MegabyteHeapToo() throws Exception {
        Path html = dir.resolve("big.html");
        Run r = java("-Xmx256m", "-XX:+ExitOnOutOfMemoryError", "-jar", AGENT_JAR.toString(), "merge", big.toString(),
                "--html", html.toString());
        assertEquals(1, r.status(), r.out() + r.err());
        assertEquals("", r.err());
        assertTrue(r.out().contains("pid 77 on gpu-big (" + big + "): " + EVENTS + " pending events"), r.out());
        assertTrue(Files.size(html) < 200_000, "the page lists the first events, and counts the rest: " + Files.size(html));
    }
}
