package dev.ncclguard.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** config=PATH: options in a properties file, below the agent arguments, system properties and environment. */
class ConfigFileTest {
    private static final Map<String, String> NONE = Map.of();

    @TempDir
    Path dir;

    private String file(String content) throws IOException {
        Path f = dir.resolve("ncclguard.properties");
        Files.writeString(f, content, StandardCharsets.UTF_8);
        return f.toString();
    }

    private static String error(String args, Map<String, String> props, Map<String, String> env) {
        return assertThrows(OptionsException.class, () -> Options.parse(args, props, env)).getMessage();
    }

    @Test
    void aValueInTheFileMayHoldCommas() throws IOException {
        String config = file("report=/tmp/a,b/leaks-%p.json\n");
        assertEquals("/tmp/a,b/leaks-%p.json", Options.parse("config=" + config, NONE, NONE).report());
    }

    @Test
    void everyOptionMayBeSetInTheFile() throws IOException {
        String config = file("# comment\naction = cleanup\nexit-code: 3\nstacks=off\ntimeout=2s\ntext=none\n");
        Options o = Options.parse("config=" + config, NONE, NONE);
        assertEquals(Options.Action.CLEANUP, o.action());
        assertEquals(3, o.exitCode());
        assertFalse(o.stacks());
        assertEquals("none", o.text());
        assertEquals("config file " + config, o.source("action"));
        assertEquals(config, o.config());
    }

    @Test
    void systemPropertyAndEnvironmentBeatTheFileAndTheArgumentBeatsAll() throws IOException {
        String config = file("exit-code=3\nstacks=off\naction=cleanup\ntimeout=2s\n");
        Options o = Options.parse("config=" + config + ",exit-code=4",
                Map.of("ncclguard.stacks", "on", "ncclguard.exit-code", "5"),
                Map.of("NCCLGUARD_ACTION", "off", "NCCLGUARD_TEXT", "none"));
        assertEquals(4, o.exitCode());
        assertEquals("argument", o.source("exit-code"));
        assertTrue(o.stacks());
        assertEquals("system property ncclguard.stacks", o.source("stacks"));
        assertEquals(Options.Action.OFF, o.action());
        assertEquals("environment variable NCCLGUARD_ACTION", o.source("action"));
        assertEquals(java.time.Duration.ofSeconds(2), o.timeout());
        assertEquals("config file " + config, o.source("timeout"));
    }

    /** The case: a config file's exit-code=3 and -Dncclguard.exit-code=5 exit 5. */
    @Test
    void aSystemPropertyOverridesTheFileThatTheMavenPluginPasses() throws IOException {
        String config = file("exit-code=3\nreport=/tmp/r.json\n");
        Options o = Options.parse("config=" + config, Map.of("ncclguard.exit-code", "5"), NONE);
        assertEquals(5, o.exitCode());
        assertEquals("/tmp/r.json", o.report());
    }

    /**
     * Every pair of the four sources, each alone above the default: the higher one of the pair
     * wins (docs/spec.md: argument, system property, environment, config file, default).
     */
    @org.junit.jupiter.params.ParameterizedTest(name = "{0} beats {1}")
    @org.junit.jupiter.params.provider.CsvSource({
        "argument,           system property",
        "argument,           environment",
        "argument,           config file",
        "system property,    environment",
        "system property,    config file",
        "environment,        config file",
        "argument,           default",
        "system property,    default",
        "environment,        default",
        "config file,        default"})
    void theHigherSourceOfEveryPairWins(String higher, String lower) throws IOException {
        java.util.List<String> order = java.util.List.of("argument", "system property", "environment", "config file",
                "default");
        assertTrue(order.indexOf(higher) < order.indexOf(lower), "the table's order");
        // exit-code: each source gives its own value; the default is 0
        Map<String, String> values = Map.of("argument", "1", "system property", "2", "environment", "3",
                "config file", "4", "default", "0");
        StringBuilder args = new StringBuilder();
        java.util.Map<String, String> props = new java.util.HashMap<>();
        java.util.Map<String, String> env = new java.util.HashMap<>();
        String config = null;
        for (String source : new String[] {higher, lower}) {
            switch (source) {
                case "argument" -> args.append("exit-code=").append(values.get(source));
                case "system property" -> props.put("ncclguard.exit-code", values.get(source));
                case "environment" -> env.put("NCCLGUARD_EXIT_CODE", values.get(source));
                case "config file" -> config = file("exit-code=" + values.get(source) + "\n");
                default -> { }
            }
        }
        if (config != null) {
            args.append(args.length() > 0 ? "," : "").append("config=").append(config);
        }
        Options o = Options.parse(args.toString(), props, env);
        assertEquals(Integer.parseInt(values.get(higher)), o.exitCode());
        assertTrue(o.source("exit-code").startsWith(higher), o.source("exit-code"));
    }

    @Test
    void theFileMayBeNamedByASystemPropertyOrTheEnvironment() throws IOException {
        String config = file("exit-code=6\n");
        assertEquals(6, Options.parse("", Map.of("ncclguard.config", config), NONE).exitCode());
        assertEquals(6, Options.parse("", NONE, Map.of("NCCLGUARD_CONFIG", config)).exitCode());
    }

    @Test
    void theArgumentNamesTheFileBeforeTheSystemProperty() throws IOException {
        String config = file("exit-code=6\n");
        assertEquals(0, Options.parse("config=none", Map.of("ncclguard.config", config), NONE).exitCode());
    }

    @Test
    void trailingWhiteSpaceOfAValueIsDropped() throws IOException {
        assertFalse(Options.parse("config=" + file("stacks=off  \t\n"), NONE, NONE).stacks());
    }

    @Test
    void aMissingFileIsOneLine() {
        String missing = dir.resolve("nope.properties").toString();
        assertEquals("ncclguard: invalid config file '" + missing + "' for option config: no such file; "
                + "expected a readable properties file of key=value lines", error("config=" + missing, NONE, NONE));
    }

    @Test
    void aDirectoryIsOneLine() {
        assertTrue(error("config=" + dir, NONE, NONE).contains(": it is a directory;"));
    }

    @Test
    void anUnknownKeyInTheFileIsNamedWithTheFile() throws IOException {
        String config = file("reprot=/tmp/x.json\n");
        assertEquals("ncclguard: invalid config file '" + config + "' for option config: unknown option 'reprot' "
                + "(valid: action, report, text, exit-code, stacks, timeout, logging, log-level, bindings, suppress, pending-threshold, native, native-patch, nccl-profiler, native-dir, stack-depot); "
                + "expected a readable properties file of key=value lines", error("config=" + config, NONE, NONE));
    }

    @Test
    void theFileCannotNameAnotherFile() throws IOException {
        String config = file("config=/tmp/other.properties\n");
        assertTrue(error("config=" + config, NONE, NONE).contains("option config cannot be set in a config file"));
    }

    @Test
    void aBadValueInTheFileSaysItCameFromTheFile() throws IOException {
        String config = file("stacks=sometimes\n");
        assertEquals("ncclguard: invalid value 'sometimes' for option stacks (config file " + config
                + "): expected on or off", error("config=" + config, NONE, NONE));
    }

    @Test
    void aFileNamedByTheEnvironmentSaysSoWhenItCannotBeRead() {
        String missing = dir.resolve("nope.properties").toString();
        assertTrue(error("", NONE, Map.of("NCCLGUARD_CONFIG", missing))
                .contains("for option config (environment variable NCCLGUARD_CONFIG): no such file"));
    }

    @Test
    @Timeout(value = 10, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
    void aFifoIsRefusedWithoutOpeningIt() throws Exception {
        Path fifo = dir.resolve("config.fifo");
        Process p = new ProcessBuilder("mkfifo", fifo.toString()).inheritIO().start();
        assertEquals(0, p.waitFor(), "mkfifo " + fifo);
        assertEquals("ncclguard: invalid config file '" + fifo + "' for option config: it is a FIFO, not a regular"
                + " file; expected a readable properties file of key=value lines", error("config=" + fifo, NONE, NONE));
    }

    @Test
    @Timeout(value = 10, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
    void aDeviceIsRefusedWithoutReadingIt() {
        assertTrue(error("config=/dev/zero", NONE, NONE).contains(": it is a character device, not a regular file;"));
        assertTrue(error("", Map.of("ncclguard.config", "/dev/zero"), NONE)
                .contains("(system property ncclguard.config): it is a character device"));
        assertTrue(error("", NONE, Map.of("NCCLGUARD_CONFIG", "/dev/zero"))
                .contains("(environment variable NCCLGUARD_CONFIG): it is a character device"));
    }

    @Test
    @Timeout(value = 10, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
    void standardInputIsNotRead() {
        // under Maven, standard input is a pipe: reading it would wait for the build's input
        assertTrue(error("config=/dev/stdin", NONE, NONE).contains(", not a regular file;"));
    }

    @Test
    @Timeout(value = 10, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
    void aFileOverTheCapIsRefusedBeforeItIsRead() throws IOException {
        Path big = dir.resolve("big.properties");
        try (java.io.RandomAccessFile f = new java.io.RandomAccessFile(big.toFile(), "rw")) {
            f.setLength(300L << 20); // sparse: 300 MB of one line, as in the issue
        }
        assertTrue(error("config=" + big, NONE, NONE).contains(": it is larger than 1 MiB, the limit for this file;"));
    }

    @Test
    void bytesThatAreNotUtf8AreOneLine() throws IOException {
        Path f = dir.resolve("latin1.properties");
        Files.write(f, new byte[] {'t', 'e', 'x', 't', '=', (byte) 0xe9, '\n'});
        assertTrue(error("config=" + f, NONE, NONE).contains(": it is not UTF-8 text;"));
    }

    @Test
    void anEmptyConfigValueIsABadValue() {
        assertEquals("ncclguard: invalid value '' for option config: expected none or the path of a properties file "
                + "of options", error("config=", NONE, NONE));
    }

    @Test
    void noConfigFileByDefault() {
        assertNull(Options.parse("", NONE, NONE).config());
    }

    @Test
    void aLaterAttachChangesOnlyTheKeysItsFileGives() throws IOException {
        Options running = Options.parse("exit-code=2,stacks=off", NONE, NONE);
        Options changed = running.with("config=" + file("report=/tmp/a,b.json\nexit-code=5\n"));
        assertEquals("/tmp/a,b.json", changed.report());
        assertEquals(5, changed.exitCode());
        assertFalse(changed.stacks());
    }
}
