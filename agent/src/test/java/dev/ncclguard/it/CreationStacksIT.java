package dev.ncclguard.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.ncclguard.it.apps.DistinctStacksApp;
import dev.ncclguard.testkit.ChildJvm;
import dev.ncclguard.testkit.Output;
import dev.ncclguard.testkit.ReportJson;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Creating stacks through the JNA bridge and the tracker's depot of them: each leak carries its
 * own stack, whether its stack repeated an earlier one or was new, and past stack-depot a new
 * stack is reported as not kept, with one line at the time.
 */
class CreationStacksIT {
    private static final String APP = "dev.ncclguard.it.apps.DistinctStacksApp.";
    private static final String NOT_KEPT = "... not kept: 3 distinct creating stacks were live (stack-depot)";

    @TempDir
    Path dir;

    private Output run(String options, String... args) throws Exception {
        Output r = ChildJvm.sample().mainClass(AgentSafetyIT.testClasspath(), DistinctStacksApp.class.getName())
                .agent("text=none,report=" + dir.resolve("r.json") + options).run(args);
        assertEquals(0, r.exitCode(), r.describe());
        return r;
    }

    /** How many atDepth frames each event leak's stack holds, after checking that they lead it. */
    private static List<Integer> depths(List<JsonNode> events) {
        List<Integer> depths = new ArrayList<>();
        for (JsonNode e : events) {
            JsonNode stack = e.path("stack");
            assertTrue(stack.path(0).asText().startsWith(APP + "atDepth("), "first frame: " + e);
            int n = 0;
            while (stack.path(n).asText().startsWith(APP + "atDepth(")) {
                n++;
            }
            assertTrue(stack.path(n).asText().startsWith(APP + "main("), "below atDepth: " + e);
            depths.add(n - 1);
        }
        depths.sort(null);
        return depths;
    }

    @Test
    void eachLeakCarriesItsOwnStackWhetherItRepeatedOrWasNew() throws Exception {
        // 100,000 create/destroy pairs at one place first: none shows, and none changes what follows
        run("", "4", "3", "100000");
        List<JsonNode> events = ReportJson.leaks(ReportJson.read(dir.resolve("r.json")), "event");
        assertEquals(List.of(0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3), depths(events));
    }

    @Test
    void pastTheStackDepotANewStackIsReportedAsNotKeptWithOneLine() throws Exception {
        // the stream holds one of the three stacks, the first two depths the others
        Output r = run(",stack-depot=3", "5", "2");
        List<JsonNode> events = ReportJson.leaks(ReportJson.read(dir.resolve("r.json")), "event");
        List<JsonNode> kept = new ArrayList<>();
        int notKept = 0;
        for (JsonNode e : events) {
            if (e.path("stack").size() == 1 && e.path("stack").path(0).asText().equals(NOT_KEPT)) {
                notKept++;
            } else {
                kept.add(e);
            }
        }
        assertEquals(List.of(0, 0, 1, 1), depths(kept));
        assertEquals(6, notKept, events.toString());
        String err = r.stderr();
        assertEquals(1, err.split("stack-depot=3 distinct creating stacks are held", -1).length - 1, err);
    }
}
