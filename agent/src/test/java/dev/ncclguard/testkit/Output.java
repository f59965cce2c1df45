package dev.ncclguard.testkit;

import java.util.List;

/** What a child process did: its exit status, what it printed, how long it ran, and how it was started. */
public record Output(int exitCode, String stdout, String stderr, long millis, List<String> command) {
    /** The lines of stderr that are not blank: a one-line error is one element. */
    public List<String> errLines() {
        return stderr.lines().filter(l -> !l.isBlank()).toList();
    }

    /** For assertion messages: everything needed to see what the child did. */
    public String describe() {
        return "exit " + exitCode + " after " + millis + " ms: " + String.join(" ", command)
                + "\n--- stdout\n" + stdout + "--- stderr\n" + stderr;
    }
}
