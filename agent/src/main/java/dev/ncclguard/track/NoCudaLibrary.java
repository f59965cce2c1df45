package dev.ncclguard.track;

/**
 * Thrown by {@link NativeAccess#call} for a call of the agent's own (an exit probe, a cleanup's
 * query or release) that no loaded library can make: neither a CUDA runtime nor the driver
 * (libcuda.so.1) is loaded. The failure is the agent's, worded as such, never as a call of the
 * application's that found no library.
 */
public final class NoCudaLibrary extends IllegalStateException {
    private static final long serialVersionUID = 1L;

    public NoCudaLibrary() {
        super("no CUDA runtime or driver loaded");
    }

    /** How the agent words its own call that could not be made: "could not query stream 0x1f: ...". */
    public String wording(String verb, String kindWord, long handle) {
        return "could not " + verb + " " + kindWord + " 0x" + Long.toHexString(handle) + ": " + getMessage();
    }
}
