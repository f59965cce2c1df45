package dev.ncclguard.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.ncclguard.it.apps.AgentDoorProbeApp;
import dev.ncclguard.testkit.ChildJvm;
import dev.ncclguard.testkit.Output;
import dev.ncclguard.testkit.ReportJson;
import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Issue 34 item 2: the agent opens no door into the JDK. Application code runs every step of the
 * reported attack (AgentDoorProbeApp) with the agent loaded, on each JDK there is: each step is
 * denied, the application runs on, and the agent still reports the communicator it leaks.
 */
class AgentDoorIT {
    private static final Path JDKS = Path.of("/usr/lib/jvm");

    @TempDir
    Path dir;

    @ParameterizedTest(name = "Java {0}")
    @ValueSource(ints = {17, 21, 25})
    void everyStepOfTheAttackIsDeniedAndTheAgentStillTracks(int feature) throws Exception {
        boolean current = feature == Runtime.version().feature();
        String home = current ? null : jdk(feature);
        Assumptions.assumeTrue(current || home != null, "SKIPPED: no JDK " + feature + " under " + JDKS);
        Path report = dir.resolve("door-" + feature + ".json");
        ChildJvm child = ChildJvm.sample().agent("report=" + report + ",text=none")
                .mainClass(AgentSafetyIT.testClasspath() + File.pathSeparator
                        + System.getProperty("ncclguard.test.samplesClasses"), AgentDoorProbeApp.class.getName());
        Output r = (home == null ? child : child.javaHome(home)).run();
        assertEquals(0, r.exitCode(), r.describe());
        String out = r.stdout();
        assertTrue(out.contains("read Hooks.jna: denied"), r.describe());
        assertTrue(out.contains("write Hooks.exitStatus: denied"), r.describe());
        assertTrue(out.contains("boot hook fields: denied"), r.describe());
        assertTrue(out.contains("private lookup in Hooks: denied"), r.describe());
        assertTrue(out.contains("Unsafe.getUnsafe: refused"), r.describe());
        // the entry class (in the application's unnamed module) may lead to the loader: nothing past it opens
        assertTrue(out.contains("loaders to try: 0") || out.contains("defineInBootLoader: denied"), r.describe());
        assertTrue(out.contains("loaders to try: 0") || out.contains("read Backtraces.UNSAFE: denied"), r.describe());
        assertFalse(out.contains("REACHED"), r.describe());
        assertTrue(out.contains("application done"), r.describe());
        JsonNode json = ReportJson.read(report);
        List<JsonNode> comms = ReportJson.leaks(json, "comm");
        assertEquals(1, comms.size(), json.toString());
        assertEquals("jna-interface", comms.get(0).path("bridge").asText(), json.toString());
    }

    /** A JDK of that feature release under /usr/lib/jvm (its release file says), or null. */
    static String jdk(int feature) throws IOException {
        if (!Files.isDirectory(JDKS)) {
            return null;
        }
        try (Stream<Path> homes = Files.list(JDKS)) {
            for (Path home : homes.sorted().toList()) {
                Path release = home.resolve("release");
                if (Files.isRegularFile(release) && Files.isExecutable(home.resolve("bin/java"))) {
                    String text = Files.readString(release);
                    if (text.contains("JAVA_VERSION=\"" + feature + "\"") || text.contains("JAVA_VERSION=\"" + feature + ".")) {
                        return home.toString();
                    }
                }
            }
        }
        return null;
    }
}
