package dev.ncclguard.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class CliTest {
    @TempDir
    Path dir;

    private ByteArrayOutputStream out = new ByteArrayOutputStream();
    private ByteArrayOutputStream err = new ByteArrayOutputStream();

    private int run(String... args) {
        out = new ByteArrayOutputStream();
        err = new ByteArrayOutputStream();
        return Cli.run(args, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
    }

    private String out() {
        return out.toString(StandardCharsets.UTF_8);
    }

    private String err() {
        return err.toString(StandardCharsets.UTF_8);
    }

    @Test
    void unknownCommandIsOneLineListingTheCommands() {
        assertEquals(2, run("frobnicate"));
        assertEquals(1, err().lines().count(), err());
        assertTrue(err().contains("'frobnicate'") && err().contains("check, merge, explain, attach, dump, version"), err());
    }

    @Test
    void noCommandPrintsUsageOnStderrAndFailsAsUsage() {
        assertEquals(2, run());
        assertTrue(err().startsWith("ncclguard: no command given\n") && err().contains("\nUsage: ncclguard "), err());
        assertEquals("", out());
    }

    @Test
    void helpListsTheCommandsAndSucceeds() {
        assertEquals(0, run("--help"));
        assertTrue(out().contains("Commands:") && out().contains("  merge ") && out().contains("Exit status"), out());
    }

    /** --help and 'help options' list every option of the one table, each with its default. */
    @Test
    void helpListsEveryAgentOptionWithItsDefault() {
        assertEquals(0, run("help", "options"));
        String options = out();
        for (String key : dev.ncclguard.config.Options.keys()) {
            assertTrue(options.lines().anyMatch(l -> l.startsWith("  " + key + " ") && l.contains("(default: ")),
                    key + " in: " + options);
        }
        assertTrue(options.contains("  log-level           info or debug (default: info)"), options);
        assertTrue(options.contains("order: argument, system property, environment variable, config file, default."), options);
        assertEquals(0, run("--help"));
        assertTrue(out().contains("  exit-code           an integer from 0 to 255 (default: 0)"), out());
        assertTrue(out().contains("%p, %h, %t"), "no format escape left in the footer: " + out());
        assertEquals(2, run("help", "nonsense"));
        assertTrue(err().startsWith("ncclguard help: unknown command 'nonsense'"), err());
    }

    @ParameterizedTest
    @ValueSource(strings = {"check", "merge", "explain", "attach", "dump", "version"})
    void everyCommandAnswersHelpWithItsUsageAndStatus0(String command) {
        assertEquals(0, run(command, "--help"), err());
        assertTrue(out().startsWith("Usage: ncclguard " + command), out());
        assertEquals("", err());
        assertEquals(0, run("help", command), err());
        assertTrue(out().startsWith("Usage: ncclguard " + command), out());
    }

    @Test
    void versionOptionAndCommandPrintTheAgentVersion() {
        assertEquals(0, run("--version"));
        String version = out();
        assertTrue(version.startsWith("ncclguard "), version);
        assertEquals(0, run("version"));
        assertEquals(version, out());
        assertEquals(0, run("check", "--version"));
        assertEquals(version, out());
    }

    @Test
    void optionsMayComeBeforeOrAfterTheArguments() throws Exception {
        TestReports.process(1, "a").comm("00000000000000aa", 0, 1, 0x10, 100, 200).write(dir, "r.json");
        Path before = dir.resolve("before.html");
        Path after = dir.resolve("after.html");
        assertEquals(0, run("merge", "--html", before.toString(), dir.resolve("r.json").toString()), err());
        assertEquals(0, run("merge", dir.resolve("r.json").toString(), "--html=" + after), err());
        assertEquals(Files.readString(before), Files.readString(after));
    }

    @Test
    void aBadCommandLineIsOneLineAndStatus2() {
        assertEquals(2, run("merge", "a.json", "--pdf"));
        assertEquals(1, err().lines().count(), err());
        assertTrue(err().startsWith("ncclguard merge: Unknown option: '--pdf'"), err());
        assertTrue(err().contains("--help"), err());
        assertEquals(2, run("merge", "a.json", "--html"));
        assertTrue(err().startsWith("ncclguard merge: Missing required parameter for option '--html'"), err());
        assertEquals(2, run("check"));
        assertTrue(err().startsWith("ncclguard check: Missing required parameter: 'REPORT'"), err());
    }

    @Test
    void argumentsAfterDoubleDashAreArgumentsEvenWhenTheyLookLikeOptions() throws Exception {
        assertEquals(1, run("check", "--", "--help"));
        assertTrue(out().contains("BAD   --help: cannot read: no such file"), out());
    }
}
