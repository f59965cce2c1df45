package dev.ncclguard.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.ncclguard.it.apps.MBeanApp;
import dev.ncclguard.it.apps.RegisteringServiceApp;
import dev.ncclguard.testkit.ChildJvm;
import dev.ncclguard.testkit.Output;
import dev.ncclguard.testkit.ReportJson;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The JMX and JFR views in a JVM started with the agent. */
class LiveViewIT {
    @TempDir
    Path dir;

    @Test
    void mbeanIsRegisteredAtTheFirstTrackedCallNeverInPremain() throws Exception {
        Output r = ChildJvm.sample().agent("")
                .jvmArg("--add-opens=java.management/java.lang.management=ALL-UNNAMED")
                .mainClass(AgentSafetyIT.testClasspath(), MBeanApp.class.getName()).run();
        assertEquals(0, r.exitCode(), r.describe());
        assertTrue(r.stdout().contains("platform MBean server 2 s into main: absent"), r.describe());
        assertTrue(r.stdout().contains("after the first call: registered, 1 event created"), r.describe());
    }

    /**
     * A service that registers and never deregisters: the MBean counts its memory, registrations,
     * windows and device communicators as they grow and shrink, and the live report's communicator
     * carries the counts.
     */
    @Test
    void mbeanCountsRegistrationsWindowsDeviceCommunicatorsAndMemoryOfLiveCommunicators() throws Exception {
        Output r = ChildJvm.sample().agent("text=none")
                .mainClass(AgentSafetyIT.testClasspath(), RegisteringServiceApp.class.getName()).run();
        assertEquals(0, r.exitCode(), r.describe());
        assertTrue(r.stdout().contains("registered: LiveMemory=1 LiveMemoryBytes=1048576 LiveRegistrations=3"
                + " RegisteredBytes=12288 LiveWindows=1 WindowBytes=4096 LiveDeviceCommunicators=1"), r.describe());
        assertTrue(r.stdout().contains("after one deregister: LiveMemory=1 LiveMemoryBytes=1048576 LiveRegistrations=2"
                + " RegisteredBytes=8192 LiveWindows=1 WindowBytes=4096 LiveDeviceCommunicators=1"), r.describe());
        String json = r.stdout().lines().filter(l -> l.startsWith("live-json: ")).findFirst()
                .orElseThrow(() -> new AssertionError("no live report: " + r.describe())).substring("live-json: ".length());
        JsonNode live = ReportJson.parse(json, "the MBean's reportJson");
        assertTrue(live.path("live").asBoolean(), json);
        JsonNode comm = ReportJson.leaks(live, "comm").get(0);
        JsonNode registrations = comm.path("details").path("registrations");
        assertEquals(3, registrations.path("registered").asInt(), comm.toString());
        assertEquals(2, registrations.path("stillRegistered").asInt(), comm.toString());
        assertEquals(8192, registrations.path("bytes").asLong(), comm.toString());
        assertEquals(1, comm.path("details").path("windows").path("stillRegistered").asInt(), comm.toString());
        assertEquals(1, comm.path("details").path("deviceCommunicators").asInt(), comm.toString());
        assertEquals(1, ReportJson.leaks(live, "memory").size(), json);
        assertEquals(1, ReportJson.leaks(live, "devcomm").size(), json);
    }

    @Test
    void recordingDumpedByJfrAtExitHasTheExitReportsEvents() throws Exception {
        Path recording = dir.resolve("leaky.jfr");
        Path report = dir.resolve("leaky.json");
        Output r = ChildJvm.sample().agent("action=cleanup,text=none,report=" + report)
                .jvmArg("-XX:StartFlightRecording:filename=" + recording).run("leaky");
        assertEquals(0, r.exitCode(), r.describe());
        JsonNode json = ReportJson.read(report);

        List<RecordedEvent> events = RecordingFile.readAllEvents(recording);
        Set<String> leaked = events.stream().filter(e -> e.getEventType().getName().equals("dev.ncclguard.LeakFound"))
                .map(e -> e.getString("kind") + " " + e.getString("handle")).collect(Collectors.toSet());
        Set<String> reported = ReportJson.leaks(json, "comm").stream().map(l -> "comm " + l.path("handle").asText())
                .collect(Collectors.toSet());
        assertEquals(2, reported.size(), json.toString());
        assertTrue(leaked.containsAll(reported), "LeakFound " + leaked + " for the report's " + reported);
        assertEquals(json.path("leaks").size(), leaked.size(), leaked.toString());
        long destroyed = events.stream().filter(e -> e.getEventType().getName().equals("dev.ncclguard.CleanupAction")
                && e.getString("kind").equals("comm") && e.getString("outcome").equals("destroyed")).count();
        assertEquals(2, destroyed, "CleanupAction per destroyed communicator");
        assertEquals(2, events.stream().filter(e -> e.getEventType().getName()
                .equals("dev.ncclguard.CommunicatorCreated")).count());
    }
}
