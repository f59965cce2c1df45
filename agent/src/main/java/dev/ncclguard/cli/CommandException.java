package dev.ncclguard.cli;

/** A command's failure, as the one line that says why (Cli prints it after "ncclguard: COMMAND failed: "). */
class CommandException extends Exception {
    private static final long serialVersionUID = 1L;

    CommandException(String message) {
        super(message);
    }

    /** A failure whose message is already the whole line to print, as is (a bad option's). */
    static final class Line extends CommandException {
        private static final long serialVersionUID = 1L;

        Line(String line) {
            super(line);
        }
    }
}
