package dev.ncclguard.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class TargetTest {
    @Test
    void jdk17NeverWarnsOfADynamicAgent() {
        assertFalse(Target.dynamicLoadingWarns(17, ""));
    }

    @Test
    void jdk21AndLaterWarnUnlessTheFlagWasGiven() {
        assertTrue(Target.dynamicLoadingWarns(21, "-Xmx1g"));
        assertTrue(Target.dynamicLoadingWarns(25, ""));
        assertFalse(Target.dynamicLoadingWarns(25, "-Xmx1g -XX:+EnableDynamicAgentLoading"));
        assertTrue(Target.dynamicLoadingWarns(25, "-XX:+EnableDynamicAgentLoading -XX:-EnableDynamicAgentLoading"));
    }

    @Test
    void attachNeedsANumericPid() {
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int status = Cli.run(new String[] {"attach", "myapp"}, new PrintStream(new ByteArrayOutputStream()),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        assertEquals(2, status);
        assertEquals("ncclguard attach: 'myapp' is not a process id\n", err.toString(StandardCharsets.UTF_8));
    }

    @Test
    void dumpOfAPidThatIsNotANumberIsAUsageError() {
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int status = Cli.run(new String[] {"dump", "--json", "myapp"}, new PrintStream(new ByteArrayOutputStream()),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        assertEquals(2, status);
        assertEquals("ncclguard dump: 'myapp' is not a process id\n", err.toString(StandardCharsets.UTF_8));
    }

    @Test
    void usageShowsAttachAndDumpArguments() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        assertEquals(0, Cli.run(new String[] {"attach", "--help"}, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(new ByteArrayOutputStream())));
        assertTrue(out.toString(StandardCharsets.UTF_8).contains("attach [-hV] <pid> [key=value,...]"), out.toString());
        out.reset();
        assertEquals(0, Cli.run(new String[] {"dump", "--help"}, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(new ByteArrayOutputStream())));
        assertTrue(out.toString(StandardCharsets.UTF_8).contains("dump [-hV] [--json] <pid>"), out.toString());
    }
}
