package dev.ncclguard.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ncclguard.testkit.Repository;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * Special files the tests make themselves, never the machine's own /dev: FIFOs (mkfifo), and a
 * pseudo-terminal that util-linux script(1) opens for a command of the CLI run in it.
 */
final class Fifos {
    static final Path SCRIPT = Path.of("/usr/bin/script");

    private Fifos() {
    }

    static Path make(Path path) throws Exception {
        Files.createDirectories(path.getParent());
        Process p = new ProcessBuilder("mkfifo", path.toString()).inheritIO().start();
        p.waitFor(10, TimeUnit.SECONDS);
        assertEquals(0, p.exitValue(), "mkfifo " + path);
        return path;
    }

    /** What a terminal shows, and the exit status, of {@code java dev.ncclguard.cli.Cli ARGS} run in a new pseudo-terminal. */
    record Terminal(int status, String screen) {
    }

    /** Runs the CLI in a pseudo-terminal; {@code args} is shell text, in which "$(tty)" names that terminal. */
    static Terminal cliInTerminal(Path dir, String args) throws Exception {
        String classpath = Repository.classpathOf(Cli.class, dev.ncclguard.catalog.Kind.class, picocli.CommandLine.class);
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        String cmd = "exec " + java + " -cp '" + classpath + "' dev.ncclguard.cli.Cli " + args;
        Path typescript = Files.createTempFile(dir, "typescript", ".txt");
        Process p = new ProcessBuilder(SCRIPT.toString(), "-q", "-e", "-c", cmd, typescript.toString())
                .redirectErrorStream(true).redirectOutput(dir.resolve("script.out").toFile()).start();
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "script finished");
        return new Terminal(p.exitValue(), Files.readString(typescript, StandardCharsets.ISO_8859_1));
    }
}
