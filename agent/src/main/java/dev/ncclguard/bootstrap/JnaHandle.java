package dev.ncclguard.bootstrap;

/**
 * Reads the native address out of a JNA argument of one class. It sits in the boot loader so that
 * a subclass generated into JNA's own package, in whatever class loader JNA lives, can extend it
 * (bridge.JnaHandles): reading a Pointer there is a plain call the JIT inlines, not a method handle.
 */
public abstract class JnaHandle {
    /** The argument class this reads; a caller checks it before {@link #of}. */
    public final Class<?> type;

    protected JnaHandle(Class<?> type) {
        this.type = type;
    }

    /** The address {@code arg}, an instance of {@link #type}, holds; 0 for none. */
    public abstract long of(Object arg);
}
