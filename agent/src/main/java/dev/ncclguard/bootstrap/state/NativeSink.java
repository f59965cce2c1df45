package dev.ncclguard.bootstrap.state;

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

    /*
     * The calls the tracker follows on their handle and stream alone (event record, query and
     * synchronize, stream query and synchronize, collectives): the wrapper hands over only those
     * two slots (handle, then stream; (0, null) where the function has none) and carries the
     * record found before the call and the token to the exit in its own locals.
     */

    /** Before the native call: what the call acts on, or null; handed to {@link #token} and {@link #exit(int, Object, long, Object, long, Object, long, Object, long)}. */
    Object find(int site, long handle, Object handleRef, long stream, Object streamRef);

    /** After {@link #find}, before the native call: the token for the exit. */
    long token(int site, Object found);

    /** After the native call returned (not when it threw), with what {@link #find} and {@link #token} returned. */
    void exit(int site, Object found, long handle, Object handleRef, long stream, Object streamRef, long result,
            Object receiver, long token);
}
