package dev.ncclguard.cli;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** Whether a stream of this process is a terminal, which Java itself tells only for all of them together. */
final class Terminal {
    private Terminal() {
    }

    /** Whether standard error goes to a terminal: progress lines are for a person watching, not for a log. */
    static boolean isStderr() {
        try {
            String target = Files.readSymbolicLink(Path.of("/proc/self/fd/2")).toString();
            return target.startsWith("/dev/pts/") || target.startsWith("/dev/tty") || target.equals("/dev/console");
        } catch (IOException | UnsupportedOperationException | SecurityException e) {
            return false; // not Linux, or no /proc: no progress
        }
    }
}
