package dev.ncclguard.bootstrap.state;

/** What the agent's FFM bridge does with what advice inlined into the JDK's java.lang.foreign code saw. */
public interface FfmSink {
    /** A library symbol was looked up (SymbolLookup) and found at {@code address}. */
    void symbol(String name, long address);

    /**
     * A downcall handle was made for the function at {@code symbol} (a MemorySegment): returns the
     * handle the application gets, the same one or one that tells the tracker around each call.
     */
    Object downcall(Object handle, Object symbol);
}
