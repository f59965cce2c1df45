package dev.ncclguard.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class CliTest {
    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final ByteArrayOutputStream err = new ByteArrayOutputStream();

    private int run(String... args) {
        return Cli.run(args, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
    }

    @Test
    void unknownCommandIsOneLineListingTheCommands() {
        assertEquals(2, run("frobnicate"));
        String e = err.toString(StandardCharsets.UTF_8);
        assertEquals(1, e.lines().count(), e);
        assertTrue(e.contains("'frobnicate'") && e.contains("version"), e);
    }

    @Test
    void noCommandPrintsUsageAndFails() {
        assertEquals(2, run());
        assertTrue(err.toString(StandardCharsets.UTF_8).startsWith("usage: "));
    }

    @Test
    void helpPrintsUsageAndSucceeds() {
        assertEquals(0, run("--help"));
        assertTrue(out.toString(StandardCharsets.UTF_8).contains("commands:"));
    }

    @Test
    void versionPrintsTheAgentVersion() {
        assertEquals(0, run("version"));
        assertTrue(out.toString(StandardCharsets.UTF_8).startsWith("ncclguard "));
    }
}
