package dev.ncclguard.bootstrap;

/**
 * What the agent does around a wrapped native method (JNA direct mapping, JNI, JavaCPP, bindings
 * file): the Java method of the original name that the agent generates calls these around the
 * renamed native. {@code site} names the wrapped method. The site's arguments come in five slots,
 * not boxed: slot k holds the k-th argument the site's function reads (the site knows which Java
 * argument that is), as {@code wk} when it is a number (int widened to long) or as {@code rk}
 * when it is a reference; unused slots hold 0 and null. So a call allocates nothing.
 */
public interface NativeSink {
    /** As {@link JnaSink#PARK}: the release of a handle the exit-time cleanup claimed; the hook parks. */
    long PARK = JnaSink.PARK;

    /** Before the native call; returns a token handed to {@link #exit}. */
    long enter(int site, long w0, Object r0, long w1, Object r1, long w2, Object r2, long w3, Object r3,
            long w4, Object r4);

    /**
     * After the native call returned (not when it threw). {@code result} is a primitive result
     * widened to long (0 for void and reference results); {@code receiver} is the instance a
     * non-static method was called on, else null.
     */
    void exit(int site, long w0, Object r0, long w1, Object r1, long w2, Object r2, long w3, Object r3,
            long w4, Object r4, long result, Object receiver, long token);
}
