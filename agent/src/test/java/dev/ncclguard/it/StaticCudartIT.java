package dev.ncclguard.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.ncclguard.testkit.ChildJvm;
import dev.ncclguard.testkit.Output;
import dev.ncclguard.testkit.ReportJson;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A JNI library with the CUDA runtime linked in statically (nvcc's default; the samples'
 * libscudart_runtime.so and the emulator's libcudart_static.a stand-in), whose stream and event
 * reach the driver only through cuGetProcAddress, in a child JVM under the agent.
 */
class StaticCudartIT {
    static final String OPEN = "dev.ncclguard.samples.ep.ScudartRuntime.open(Native Method)";
    static final String RUNTIME = "libscudart_runtime.so";

    @TempDir
    Path dir;

    @Test
    void itsLeakedStreamAndEventAreReportedWithTheJavaStackAndTheDriverFunction() throws Exception {
        Path report = dir.resolve("leaky.json");
        Output r = ChildJvm.sample().agent("report=" + report).run("ep-scudart-leaky", "--iters", "3");
        assertEquals(0, r.exitCode(), r.describe());
        JsonNode json = ReportJson.read(report);
        for (String kind : List.of("stream", "event")) {
            List<JsonNode> leaks = ReportJson.leaks(json, kind);
            assertEquals(1, leaks.size(), kind + ": " + json);
            JsonNode leak = leaks.get(0);
            assertEquals(kind.equals("event") ? "cuEventCreate" : "cuStreamCreate", leak.path("api").asText(), leak.toString());
            assertEquals("native", leak.path("bridge").asText(), leak.toString());
            assertEquals(RUNTIME, leak.path("callerLibrary").asText(), leak.toString());
            // the application's function, not the static runtime's one call site of the driver
            assertEquals("Java_dev_ncclguard_samples_ep_ScudartRuntime_open", leak.path("callerSymbol").asText(), leak.toString());
            assertEquals(OPEN, leak.path("stack").path(0).asText(), leak.toString());
        }
        assertEquals(3, ReportJson.leaks(json, "stream").get(0).path("details").path("pendingOps").asLong(), json.toString());
        // the exit probe reached the driver: the work is known complete, no call is worded as the application's
        assertFalse(ReportJson.leaks(json, "event").get(0).path("details").path("stillPending").asBoolean(true), json.toString());
        assertFalse(r.stderr().contains("was called but"), r.describe());
    }

    @Test
    void aCleanRunReportsNoLeak() throws Exception {
        Path report = dir.resolve("clean.json");
        Output r = ChildJvm.sample().agent("report=" + report).run("ep-scudart-clean", "--iters", "3");
        assertEquals(0, r.exitCode(), r.describe());
        assertEquals(0, ReportJson.read(report).path("leaks").size(), r.describe());
    }

    @Test
    void cleanupReleasesItsEventAndSynchronizesItsStreamThroughTheDriver() throws Exception {
        Path report = dir.resolve("cleanup.json");
        Path alive = dir.resolve("alive.txt");
        Output r = ChildJvm.sample().agent("action=cleanup,report=" + report)
                .env("NCCLEMU_REPORT", alive.toString()).run("ep-scudart-leaky", "--iters", "3");
        assertEquals(0, r.exitCode(), r.describe());
        JsonNode json = ReportJson.read(report);
        assertEquals("synchronized", ReportJson.leaks(json, "event").get(0).path("cleanup").asText(), json.toString());
        assertEquals("synchronized", ReportJson.leaks(json, "stream").get(0).path("cleanup").asText(), json.toString());
        assertEquals(2, ReportJson.summary(json, "cleaned"), json.toString());
        assertEquals(0, ReportJson.summary(json, "cleanupFailed"), json.toString());
        // the event destroyed (cuEventDestroy_v2), the stream left to the application with nothing pending
        List<String> left = ReportJson.aliveAtExit(alive);
        assertEquals(1, left.size(), left + "\n" + r.describe());
        assertTrue(left.get(0).startsWith("stream ") && left.get(0).endsWith(" pending 0"), left + "\n" + r.describe());
    }

    @Test
    void theProgramsOutputAndStatusAreThoseOfARunWithoutTheAgent() throws Exception {
        for (String scenario : List.of("ep-scudart-clean", "ep-scudart-leaky")) {
            Output without = ChildJvm.sample().run(scenario, "--iters", "5");
            Output with = ChildJvm.sample().agent("text=none").run(scenario, "--iters", "5");
            assertEquals(0, without.exitCode(), without.describe());
            assertEquals(without.exitCode(), with.exitCode(), with.describe());
            assertEquals(without.stdout(), with.stdout(), with.describe());
        }
    }
}
