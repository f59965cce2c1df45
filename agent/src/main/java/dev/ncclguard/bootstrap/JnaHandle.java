package dev.ncclguard.bootstrap;

/**
 * Reads the native address out of a JNA handle argument. It sits in the boot loader so that a
 * subclass generated into JNA's own package, in whatever class loader JNA lives, can extend it
 * (bridge.JnaHandles): reading a Pointer there is code the JIT inlines, not a method handle.
 */
public abstract class JnaHandle {
    /** The address {@code arg} holds; 0 for none or for what cannot be read. Never throws. */
    public abstract long of(Object arg);
}
