package dev.ncclguard.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ncclguard.testkit.ChildJvm;
import dev.ncclguard.testkit.Output;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.jar.JarFile;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The command line as users run it: {@code java -jar ncclguard-agent.jar ...}, with its shaded picocli. */
class CliJarIT {
    /** As many events as the agent's own 80 MB report of issue 20 holds. */
    private static final int EVENTS = 200_000;

    @TempDir
    static Path dir;
    static Path big;

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
        Output version = ChildJvm.agentCli().run("--version");
        assertEquals(0, version.exitCode(), version.stderr());
        assertTrue(version.stdout().startsWith("ncclguard "), version.stdout());
        for (String command : new String[] {"check", "merge", "explain", "attach", "dump"}) {
            Output help = ChildJvm.agentCli().run(command, "--help");
            assertEquals(0, help.exitCode(), command + ": " + help.stderr());
            assertTrue(help.stdout().startsWith("Usage: ncclguard " + command), help.stdout());
        }
        Output bad = ChildJvm.agentCli().run("check");
        assertEquals(2, bad.exitCode());
        assertEquals(1, bad.stderr().lines().count(), bad.stderr());
    }

    @Test
    void picocliIsInTheJarOnlyUnderTheShadedPackage() throws Exception {
        try (JarFile jar = new JarFile(ChildJvm.AGENT_JAR.toFile())) {
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
        Output r = ChildJvm.agentCli().jvmArg("-Xmx256m").jvmArg("-XX:+ExitOnOutOfMemoryError").run("check", big.toString());
        long ms = (System.nanoTime() - start) / 1_000_000;
        assertEquals(1, r.exitCode(), r.stdout() + r.stderr());
        assertEquals("", r.stderr());
        assertTrue(r.stdout().contains("LEAKS " + big + " (pid 77 on gpu-big): " + EVENTS + " pending events"), r.stdout());
        assertTrue(r.stdout().contains(", and 199,999 more alike: 0x100001, "), r.stdout());
        assertTrue(ms < 60_000, ms + " ms");
    }

    @Test
    void mergeOfItRunsInA256MegabyteHeapToo() throws Exception {
        Path html = dir.resolve("big.html");
        Output r = ChildJvm.agentCli().jvmArg("-Xmx256m").jvmArg("-XX:+ExitOnOutOfMemoryError").run("merge", big.toString(),
                "--html", html.toString());
        assertEquals(1, r.exitCode(), r.stdout() + r.stderr());
        assertEquals("", r.stderr());
        assertTrue(r.stdout().contains("pid 77 on gpu-big (" + big + "): " + EVENTS + " pending events"), r.stdout());
        assertTrue(Files.size(html) < 200_000, "the page lists the first events, and counts the rest: " + Files.size(html));
    }
}
