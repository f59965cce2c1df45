package dev.ncclguard.cli;

/**
 * A command that cannot go on, as the one line that says why (printed after "ncclguard COMMAND: ");
 * the exit status is {@link Cli#USAGE}: a bad argument, or an input or output that cannot be used.
 */
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
