package dev.ncclguard.bootstrap;

/** What the agent's JNA bridge does with a call that advice inlined into com.sun.jna.Function saw. */
public interface JnaSink {
    /**
     * The token {@link #enter} returns for a release of a handle that the agent's exit-time
     * cleanup has claimed: the hook parks the calling thread instead of letting the call reach
     * the library, which would release the handle a second time.
     */
    long PARK = Long.MIN_VALUE;

    /** The catalog entry for a native symbol, or null when the symbol is not tracked. */
    Object lookup(String symbol);

    /** Before the native call of a tracked symbol; returns a token handed to {@link #exit}. */
    long enter(Object fn, Object[] args);

    /** After the native call returned (not when it threw). */
    void exit(Object fn, Object library, Object[] args, Object result, long token);
}
