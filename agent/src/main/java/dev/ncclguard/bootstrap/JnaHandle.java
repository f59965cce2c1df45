package dev.ncclguard.bootstrap;

/**
 * Reads the native address out of a JNA handle argument. It sits in the boot loader so that a
 * subclass generated into JNA's own package, in whatever class loader JNA lives, can extend it
 * (bridge.JnaHandles): reading a Pointer there is code the JIT inlines, not a method handle, and
 * the first calls of a JVM spin no method handle classes.
 */
public abstract class JnaHandle {
    /** The address {@code arg} holds; 0 for none or for what cannot be read. Never throws. */
    public abstract long of(Object arg);

    /**
     * The Pointer {@code arg} is (a Pointer, Memory) or holds (a PointerType, ByReference,
     * Structure) in this JNA; null for anything else. May throw what JNA throws.
     */
    public Object pointer(Object arg) {
        return null;
    }

    /** {@code pointer.getLong(offset)}; {@code pointer} is one {@link #pointer} answered. */
    public long getLong(Object pointer, long offset) {
        return 0L;
    }

    /** {@code pointer.getInt(offset)}; {@code pointer} is one {@link #pointer} answered. */
    public int getInt(Object pointer, long offset) {
        return 0;
    }

    /** {@code pointer.getByteArray(offset, length)}; {@code pointer} is one {@link #pointer} answered. */
    public byte[] getByteArray(Object pointer, long offset, int length) {
        return null;
    }
}
