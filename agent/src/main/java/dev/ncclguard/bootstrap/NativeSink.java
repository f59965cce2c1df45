package dev.ncclguard.bootstrap;

/**
 * What the agent does around a wrapped native method (JNA direct mapping, JNI, JavaCPP, bindings
 * file): the Java method of the original name that the agent generates calls these around the
 * renamed native. {@code site} names the wrapped method; {@code args} are its arguments, boxed.
 */
public interface NativeSink {
    /** As {@link JnaSink#PARK}: the release of a handle the exit-time cleanup claimed; the hook parks. */
    long PARK = JnaSink.PARK;

    /** Before the native call; returns a token handed to {@link #exit}. */
    long enter(int site, Object[] args);

    /**
     * After the native call returned (not when it threw). {@code result} is a primitive result
     * widened to long (0 for void and reference results; a reference result is the last element
     * of {@code args}).
     */
    void exit(int site, Object[] args, long result, long token);
}
