package dev.ncclguard.config;

/**
 * A bad option key or value. The message is the one line the user sees when the JVM refuses to
 * start (or the attach fails): it names the key, the bad value and the valid choices.
 */
public final class OptionsException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    public OptionsException(String message) {
        super(message);
    }
}
