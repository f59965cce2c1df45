package dev.ncclguard.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.ncclguard.it.apps.NoGpuApp;
import dev.ncclguard.testkit.ChildJvm;
import dev.ncclguard.testkit.Output;
import dev.ncclguard.testkit.ReportJson;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What the agent costs at JVM start, as classes loaded (-Xlog:class+load), which unlike times
 * does not depend on the machine's load: premain installs only what every JVM needs, and the
 * usual JNA path never loads ASM (docs/performance.md, "Start-up").
 */
class StartupIT {
    /**
     * Premain's own classes (options and their start-time checks of report targets and stray
     * names, tracker, bridges' entry points, exit hook, the redefinition watch, and the named
     * module's layer, finder and reader) fit in this many: measured 74 on JDK 17.
     */
    private static final int MOST_AGENT_CLASSES_IN_PREMAIN = 74;
    /**
     * And with the native part (its loader, the library's file, the Interposer and its bridge, C
     * slots, the profiler bridge, native creations): measured 89 on JDK 17.
     */
    private static final int MOST_AGENT_CLASSES_IN_PREMAIN_WITH_THE_NATIVE_PART = 89;

    @TempDir
    Path dir;

    private List<String> loaded(Path log) throws Exception {
        return Files.readAllLines(log);
    }

    private static long count(List<String> lines, String part) {
        return lines.stream().filter(l -> l.contains(part)).count();
    }

    private List<String> noGpuRun(String javaHome) throws Exception {
        Path log = dir.resolve(javaHome == null ? "classes.log" : "classes-jdk25.log");
        ChildJvm child = ChildJvm.sample().agent("").jvmArg("-Xlog:class+load:file=" + log)
                .mainClass(AgentSafetyIT.testClasspath(), NoGpuApp.class.getName());
        Output r = javaHome == null ? child.run() : child.javaHome(javaHome).run();
        assertEquals(0, r.exitCode(), r.describe());
        assertEquals("hello", r.stdout().strip(), r.describe());
        return loaded(log);
    }

    @Test
    void premainLoadsNoAsmAndNothingOfThePartsAnApplicationMayNeverUse() throws Exception {
        List<String> classes = noGpuRun(null);
        assertEquals(0, count(classes, "dev.ncclguard.shaded."), "ASM loaded in a JVM that never used NCCL");
        assertEquals(0, count(classes, "java.util.zip.Adler32"), "the native-method install check ran in premain");
        assertEquals(0, count(classes, "javax.management."), "JMX touched");
        assertEquals(0, count(classes, "jdk.jfr."), "JFR touched");
        assertEquals(0, count(classes, "java.util.regex."), "regular expressions in premain");
        long agentClasses = count(classes, "source: file:" + ChildJvm.AGENT_JAR);
        assertTrue(agentClasses <= MOST_AGENT_CLASSES_IN_PREMAIN_WITH_THE_NATIVE_PART,
                agentClasses + " classes from the agent jar");
    }

    @Test
    void withoutTheNativePartPremainLoadsOnlyItsOwnClasses() throws Exception {
        Path log = dir.resolve("classes-off.log");
        ChildJvm child = ChildJvm.sample().agent("native=off,nccl-profiler=off").jvmArg("-Xlog:class+load:file=" + log)
                .mainClass(AgentSafetyIT.testClasspath(), NoGpuApp.class.getName());
        Output r = child.run();
        assertEquals(0, r.exitCode(), r.describe());
        long agentClasses = count(loaded(log), "source: file:" + ChildJvm.AGENT_JAR);
        assertTrue(agentClasses <= MOST_AGENT_CLASSES_IN_PREMAIN, agentClasses + " classes from the agent jar");
    }

    @Test
    void onJdk25TheFfmBridgeWaitsForTheFirstFfmUse() throws Exception {
        List<String> classes = noGpuRun(BridgesIT.JDK25);
        assertEquals(0, count(classes, "dev.ncclguard.shaded."), "ASM loaded in a JVM that never used NCCL");
        assertEquals(0, count(classes, "dev.ncclguard.bridge.ffm.FfmBridge "), "FFM bridge installed in premain");
    }

    @Test
    void aJnaApplicationIsTrackedWithoutLoadingAsm() throws Exception {
        Path log = dir.resolve("classes-jna.log");
        Path report = dir.resolve("report.json");
        Output r = ChildJvm.sample().agent("report=" + report).jvmArg("-Xlog:class+load:file=" + log)
                .run("clean", "--ranks", "1", "--iters", "1");
        assertEquals(0, r.exitCode(), r.describe());
        JsonNode json = ReportJson.read(report);
        assertEquals(1, ReportJson.summary(json, "commsCreated"), json.toString());
        assertEquals(1, ReportJson.summary(json, "commsReleased"), json.toString());
        assertEquals(0, count(loaded(log), "dev.ncclguard.shaded."), "ASM loaded on the JNA interface-mapping path");
    }
}
