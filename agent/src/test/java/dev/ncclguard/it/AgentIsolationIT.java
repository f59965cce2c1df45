package dev.ncclguard.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.ncclguard.it.apps.AgentProbeApp;
import dev.ncclguard.testkit.ChildJvm;
import dev.ncclguard.testkit.Output;
import dev.ncclguard.testkit.ReportJson;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The agent changes nothing the application can see: with only -javaagent on the command line, an
 * application class can neither use the JDK internals the agent opens for itself nor load the
 * agent's classes, and the agent still tracks its calls. Without the agent the same probes answer
 * the same, so these are the JVM's answers, not the agent's.
 */
class AgentIsolationIT {
    @TempDir
    Path dir;

    private static ChildJvm probe() throws Exception {
        return ChildJvm.sample().mainClass(AgentSafetyIT.testClasspath(), AgentProbeApp.class.getName());
    }

    @Test
    void theJdkInternalsTheAgentUsesStayClosedToTheApplication() throws Exception {
        Output r = probe().agent("text=none").run();
        assertEquals(0, r.exitCode(), r.describe());
        assertTrue(r.stdout().contains("exported jdk.internal.misc: false"), r.describe());
        assertTrue(r.stdout().contains("exported jdk.internal.access: false"), r.describe());
        assertTrue(r.stdout().contains("Unsafe.getUnsafe: refused"), r.describe());
    }

    @Test
    void theApplicationCannotLoadTheAgentsClassesOnlyItsBootHooks() throws Exception {
        Output r = probe().agent("text=none").run();
        assertEquals(0, r.exitCode(), r.describe());
        for (String name : List.of("dev.ncclguard.track.Tracker", "dev.ncclguard.agent.Installer",
                "dev.ncclguard.cli.Cli", "dev.ncclguard.shaded.bytebuddy.jar.asm.ClassReader")) {
            assertTrue(r.stdout().contains("load " + name + ": not found"), r.describe());
        }
        assertTrue(r.stdout().contains("load dev.ncclguard.bootstrap.Live: loaded by null"), r.describe());
    }

    @Test
    void withoutTheAgentTheProbesAnswerTheSame() throws Exception {
        Output r = probe().run();
        assertEquals(0, r.exitCode(), r.describe());
        assertTrue(r.stdout().contains("exported jdk.internal.misc: false"), r.describe());
        assertTrue(r.stdout().contains("Unsafe.getUnsafe: refused"), r.describe());
        assertTrue(r.stdout().contains("load dev.ncclguard.bootstrap.Live: not found"), r.describe());
    }

    @Test
    void theIsolatedAgentStillTracksTheApplicationsCalls() throws Exception {
        Path report = dir.resolve("probe.json");
        Output r = probe().agent("report=" + report + ",text=none").run();
        assertEquals(0, r.exitCode(), r.describe());
        JsonNode json = ReportJson.read(report);
        assertEquals(1, ReportJson.leaks(json, "event").size(), json.toString());
        assertEquals(1, ReportJson.leaks(json, "stream").size(), json.toString());
        assertTrue(json.path("agentVersion").asText().matches("\\d+\\.\\d+.*"), json.toString());
    }
}
