package dev.ncclguard.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.ncclguard.it.apps.OwnByteBuddyApp;
import dev.ncclguard.it.apps.RawFunctionApp;
import dev.ncclguard.testkit.ChildJvm;
import dev.ncclguard.testkit.Output;
import dev.ncclguard.testkit.ReportJson;
import dev.ncclguard.testkit.Repository;
import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The application's own libraries win: its JNA (another 5.x), its Byte Buddy and its SLF4J are
 * used as they are, and the agent still works. Also: the agent on the newest JDK.
 */
class ApplicationLibrariesIT {
    private static final Path APP_LIBS = Path.of(System.getProperty("ncclguard.test.appLibs"));
    private static final Path SAMPLES_CLASSES = Path.of(System.getProperty("ncclguard.test.samplesClasses"));

    @TempDir
    Path dir;

    private static String lib(String name) {
        Path jar = APP_LIBS.resolve(name);
        assertTrue(Files.isRegularFile(jar), "missing " + jar + " (copied by the build before the integration tests)");
        return jar.toString();
    }

    private static String testClasses() {
        return Repository.classpathOf(RawFunctionApp.class);
    }

    @Test
    void applicationWithAnOlderJnaIsTracked() throws Exception {
        Path report = dir.resolve("r.json");
        Output r = ChildJvm.sample().agent("report=" + report)
                .mainClass(SAMPLES_CLASSES + File.pathSeparator + lib("jna-5.14.0.jar"), "dev.ncclguard.samples.Samples")
                .run("leaky");
        assertEquals(0, r.exitCode(), r.describe());
        JsonNode json = ReportJson.read(report);
        assertEquals(2, ReportJson.leaks(json, "comm").size(), json.toString());
        assertEquals(2, ReportJson.leaks(json, "event").size(), json.toString());
    }

    @Test
    void applicationKeepsItsOwnByteBuddy() throws Exception {
        Path report = dir.resolve("r.json");
        String cp = String.join(File.pathSeparator, testClasses(), lib("byte-buddy-1.15.11.jar"),
                AgentSafetyIT.testClasspath());
        Output r = ChildJvm.sample().agent("report=" + report)
                .mainClass(cp, OwnByteBuddyApp.class.getName()).run("return");
        assertEquals(0, r.exitCode(), r.describe());
        assertTrue(r.stdout().contains("byte-buddy-1.15.11.jar"), r.describe());
        assertTrue(r.stdout().contains("made app.Made"), r.describe());
        assertEquals(1, ReportJson.leaks(ReportJson.read(report), "event").size());
    }

    @Test
    void loggingApplicationSendsTheAgentsLinesToTheApplicationsSlf4j() throws Exception {
        // a report path that passes the start check and fails at exit: %h names a directory
        Files.createDirectories(dir.resolve(Files.readString(Path.of("/proc/sys/kernel/hostname")).strip()));
        String cp = String.join(File.pathSeparator, AgentSafetyIT.testClasspath(),
                lib("slf4j-api-" + slf4jVersion() + ".jar"), lib("slf4j-simple-" + slf4jVersion() + ".jar"));
        Output r = ChildJvm.sample()
                .agent("logging=application,text=none,report=" + dir.resolve("%h"))
                .mainClass(cp, RawFunctionApp.class.getName()).run("return");
        assertEquals(0, r.exitCode(), r.describe());
        // slf4j-simple's format: "[thread] WARN dev.ncclguard.agent - message"
        assertTrue(r.stderr().lines().anyMatch(l -> l.contains("WARN dev.ncclguard.agent - cannot write report")), r.describe());
        assertFalse(r.stderr().lines().anyMatch(l -> l.startsWith("ncclguard: cannot write")), r.describe());
    }

    @Test
    void loggingApplicationWithoutAnSlf4jProviderFallsBackToStderrAndSaysSo() throws Exception {
        // a report path that passes the start check and fails at exit: %h names a directory
        Files.createDirectories(dir.resolve(Files.readString(Path.of("/proc/sys/kernel/hostname")).strip()));
        String cp = String.join(File.pathSeparator, AgentSafetyIT.testClasspath(),
                lib("slf4j-api-" + slf4jVersion() + ".jar"));
        Output r = ChildJvm.sample()
                .agent("logging=application,text=none,report=" + dir.resolve("%h"))
                .mainClass(cp, RawFunctionApp.class.getName()).run("return");
        assertEquals(0, r.exitCode(), r.describe());
        List<String> ours = r.stderr().lines().filter(l -> l.startsWith("ncclguard: ")).toList();
        assertTrue(ours.stream().anyMatch(l -> l.contains("cannot write report")), r.describe());
        assertTrue(ours.stream().anyMatch(l -> l.toLowerCase().contains("slf4j")), r.describe());
    }

    @Test
    void leaksAreReportedOnTheNewestJdk() throws Exception {
        Path jdk = Path.of("/usr/lib/jvm/temurin-25-jdk-amd64");
        assertTrue(Files.isExecutable(jdk.resolve("bin/java")), "Temurin 25 is expected at " + jdk);
        Path report = dir.resolve("r.json");
        Output r = ChildJvm.sample().javaHome(jdk.toString())
                .jvmArg("--enable-native-access=ALL-UNNAMED")
                .agent("report=" + report + ",action=cleanup").run("leaky");
        assertEquals(0, r.exitCode(), r.describe());
        assertTrue(r.stderr().lines().noneMatch(l -> l.startsWith("WARNING")), "the agent causes no JVM warning: " + r.describe());
        JsonNode json = ReportJson.read(report);
        assertEquals(2, ReportJson.leaks(json, "comm").size(), json.toString());
        for (JsonNode comm : ReportJson.leaks(json, "comm")) {
            assertEquals("destroyed", comm.path("cleanup").asText());
        }
    }

    private static String slf4jVersion() {
        try (var files = Files.list(APP_LIBS)) {
            return files.map(p -> p.getFileName().toString())
                    .filter(n -> n.startsWith("slf4j-api-")).findFirst().orElseThrow()
                    .replace("slf4j-api-", "").replace(".jar", "");
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }
}
