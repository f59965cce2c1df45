package dev.ncclguard.track;

import jdk.internal.misc.Unsafe;

/**
 * The VM's own record of a Throwable's stack, its private {@code backtrace} field: on HotSpot
 * (JDK 17 to 25), chunks of 32 frames, each arrays of method ids, bytecode indexes (with the
 * class's version), classes and method names, and a link to the next chunk. Nothing in it is
 * resolved to text, which makes a Throwable cheap to capture and, compared array by array, two of
 * them cheap to tell apart without {@code getStackTrace}.
 *
 * <p>Compiled on its own with java.base's jdk.internal.misc exported to it (agent/pom.xml), like
 * JdkInternals; the agent exports that package to its module before anything is tracked. Where
 * the export, the field or its array form is missing (another VM, a unit test run without the
 * export), {@link #READABLE} is false and nothing is read.
 */
final class Backtraces {
    static final boolean READABLE;
    private static final Unsafe UNSAFE;
    private static final long OFFSET;

    static {
        Unsafe unsafe = null;
        long offset = -1;
        try {
            unsafe = Unsafe.getUnsafe();
            offset = unsafe.objectFieldOffset(Throwable.class, "backtrace");
            if (!(unsafe.getReference(new Throwable(), offset) instanceof Object[])) {
                unsafe = null;
            }
        } catch (LinkageError | RuntimeException | InternalError e) {
            unsafe = null; // not exported to us (IllegalAccessError), or no such field
        }
        UNSAFE = unsafe;
        OFFSET = offset;
        READABLE = unsafe != null;
    }

    private Backtraces() {
    }

    /** The backtrace of {@code t}, or null when it has none (or backtraces cannot be read). */
    static Object of(Throwable t) {
        return READABLE ? UNSAFE.getReference(t, OFFSET) : null;
    }
}
