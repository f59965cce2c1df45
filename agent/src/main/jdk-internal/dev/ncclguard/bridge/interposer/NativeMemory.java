package dev.ncclguard.bridge.interposer;

import jdk.internal.misc.Unsafe;

/**
 * Reads the memory a native call's pointer arguments point to (out-parameters, a ncclUniqueId,
 * a device list), inside the call that passed them, where they are valid: the interposer's
 * upcalls run in the wrapper, before it returns. Compiled on its own with java.base's
 * jdk.internal.misc exported to it, like the tracker's Backtraces; sun.misc.Unsafe's memory
 * access warns on JDK 24 and later. Where the export is missing, {@link #READABLE} is false and
 * nothing is read (a creation is then tracked without its out-parameters: not at all).
 */
final class NativeMemory {
    static final boolean READABLE;
    private static final Unsafe UNSAFE;

    static {
        Unsafe unsafe;
        try {
            unsafe = Unsafe.getUnsafe();
        } catch (LinkageError | RuntimeException e) {
            unsafe = null; // not exported to us
        }
        UNSAFE = unsafe;
        READABLE = unsafe != null;
    }

    private NativeMemory() {
    }

    static long getLong(long address) {
        return READABLE && address != 0 ? UNSAFE.getLong(address) : 0;
    }

    static int getInt(long address, int fallback) {
        return READABLE && address != 0 ? UNSAFE.getInt(address) : fallback;
    }

    /** {@code length} bytes at {@code address}, or null. */
    static byte[] bytes(long address, int length) {
        if (!READABLE || address == 0 || length < 0) {
            return null;
        }
        // byte by byte: Unsafe.ARRAY_BYTE_BASE_OFFSET is an int on 17 and a long on 25 (a field
        // linked by its type: NoSuchFieldError there), and these are at most a unique id's 128 bytes
        byte[] out = new byte[length];
        for (int i = 0; i < length; i++) {
            out[i] = UNSAFE.getByte(address + i);
        }
        return out;
    }
}
