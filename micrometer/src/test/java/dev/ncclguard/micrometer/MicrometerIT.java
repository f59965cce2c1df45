package dev.ncclguard.micrometer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The binder in an application that runs the real agent jar against the emulator (MicrometerApp).
 * Not agent's testkit.ChildJvm: the application's class path is this JVM's, kept free of the agent
 * and its classes (classpathDependencyExcludes), which the agent's test-jar would break.
 */
class MicrometerIT {
    @Test
    void theBinderReadsTheAgentsNumbersInARunningApplication() throws Exception {
        Path agent = Path.of(System.getProperty("ncclguard.test.agentJar"));
        String emu = System.getProperty("ncclguard.test.emu");
        assertTrue(Files.isRegularFile(agent), "no agent jar at " + agent);
        Path out = Files.createTempFile("micrometer-app", ".txt");
        Process p = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-javaagent:" + agent + "=text=none", "-Dncclguard.emu=" + emu,
                "-cp", System.getProperty("java.class.path"), MicrometerApp.class.getName())
                .redirectErrorStream(true).redirectOutput(out.toFile()).start();
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), "the application did not exit");
        String printed = Files.readString(out, StandardCharsets.UTF_8);
        Files.deleteIfExists(out);
        assertEquals(0, p.exitValue(), printed);
        Map<String, Double> meters = new HashMap<>();
        for (String line : List.of(printed.split("\n"))) {
            String[] parts = line.split(" ");
            if (parts.length == 2 && parts[0].startsWith("ncclguard.")) {
                meters.put(parts[0], Double.valueOf(parts[1]));
            }
        }
        assertEquals(NcclGuardMetrics.METRICS.size(), meters.size(), printed);
        assertEquals(2.0, meters.get("ncclguard.communicator.creations"), printed);
        assertEquals(1.0, meters.get("ncclguard.communicator.releases"), printed);
        assertEquals(1.0, meters.get("ncclguard.communicators.live"), printed);
        assertEquals(60.0, meters.get("ncclguard.pending.threshold"), "the option's default: " + printed);
        assertTrue(meters.get("ncclguard.communicator.oldest.age") >= 0, printed);
        assertEquals(0.0, meters.get("ncclguard.nccl.ops.in.flight"), "none in flight as NCCL's profiler plugin counts: " + printed);
    }
}
