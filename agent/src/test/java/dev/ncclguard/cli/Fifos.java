package dev.ncclguard.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/** FIFOs the tests make themselves (mkfifo), never the machine's /dev. */
final class Fifos {
    private Fifos() {
    }

    static Path make(Path path) throws Exception {
        java.nio.file.Files.createDirectories(path.getParent());
        Process p = new ProcessBuilder("mkfifo", path.toString()).inheritIO().start();
        p.waitFor(10, TimeUnit.SECONDS);
        assertEquals(0, p.exitValue(), "mkfifo " + path);
        return path;
    }
}
