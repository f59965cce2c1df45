package dev.ncclguard.bootstrap.state;

/**
 * What the agent's JNA bridge does with a call that code woven into com.sun.jna.Function saw:
 * {@link #lookup}, {@link #find} and {@link #enter} before the native call, {@link #exit} after it.
 */
public interface JnaSink {
    /**
     * The token {@link #enter} returns for a release of a handle that the agent's exit-time
     * cleanup has claimed: the hook parks the calling thread instead of letting the call reach
     * the library, which would release the handle a second time.
     */
    long PARK = Long.MIN_VALUE;

    /** The catalog entry for a native symbol, or null when the symbol is not tracked. */
    Object lookup(String symbol);

    /**
     * Before the native call of a tracked symbol: what the call acts on, found now and handed to
     * {@link #enter} and {@link #exit} so that they need not look it up again; may be null.
     */
    Object find(Object fn, Object[] args);

    /** After {@link #find}, before the native call; returns a token handed to {@link #exit}. */
    long enter(Object fn, Object found, Object[] args);

    /** After the native call returned (not when it threw). */
    void exit(Object fn, Object found, Object library, Object[] args, Object result, long token);
}
