package dev.ncclguard.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ncclguard.log.OneLine;
import dev.ncclguard.testkit.ChildJvm;
import dev.ncclguard.testkit.Output;
import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A bad option stops the JVM with one line, whatever control characters its value holds (issue
 * 34, item 7): the value, a bindings file, a config file and a report path.
 */
class ErrorLinesIT {
    /** Line feed, carriage return, tab, ESC, U+2028 and a C1 control (NEL). */
    private static final String NASTY = "a\nb\rc\td\u001b[31me\u2028f\u0085g";

    @ParameterizedTest
    @ValueSource(strings = {"stacks=", "bindings=/nonexistent/", "config=/nonexistent/", "report=/dev/null/"})
    void aBadOptionIsOneLineAtStart(String option) throws Exception {
        Output r = ChildJvm.sample().agent(option + NASTY).run("clean");
        assertEquals(1, r.exitCode(), r.describe());
        List<String> lines = r.stderr().lines().filter(l -> !l.isBlank()).toList();
        assertEquals(1, lines.size(), r.describe());
        String line = lines.get(0);
        assertTrue(line.startsWith("ncclguard: "), line);
        assertTrue(line.contains("a\\nb\\rc\\td\\u001b[31me\\u2028f\\u0085g"), line);
        for (int i = 0; i < line.length(); i++) {
            assertFalse(OneLine.isControl(line.charAt(i)), line);
        }
    }
}
