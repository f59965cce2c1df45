package dev.ncclguard.track;

/**
 * Calls into the very library instance the application loaded, for the exit-time queries and the
 * cleanup. One instance per loaded library and bridge; the tracker keeps a reference per handle.
 */
public interface NativeAccess {
    /** Where the library came from, for the report (a file path, or a soname). */
    String library();

    /**
     * Calls {@code symbol} with handle and int arguments (each a {@code Long} handle, an
     * {@code Integer}, or a {@code byte[]}: a struct passed by pointer, these bytes its copy) and
     * returns its int status. Throws if the symbol cannot be called.
     */
    int call(String symbol, Object... args);
}
