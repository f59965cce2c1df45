package dev.ncclguard.bridge.natives;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Collection;

/**
 * Answers, from a class file's bytes and without parsing it into objects, whether the class
 * declares a native method with one of a set of names. Runs on every class the JVM defines, so it
 * walks the constant pool and the method table once, allocates nothing for a class that does not
 * match, and hashes only the UTF-8 entries whose length and first two bytes could be one of the names.
 */
public final class ClassScan {
    private static final int ACC_NATIVE = 0x0100;
    private static final byte[] JNA_NATIVE = ascii("com/sun/jna/Native");
    private static final byte[] BYTEDECO = ascii("org/bytedeco/");

    /** Open-addressing table of the names; null slots are empty. */
    private final byte[][] table;
    private final int mask;
    private final int minLength;
    private final int maxLength;
    /** Which first two bytes a name can start with: most UTF-8 entries fail here, before any hashing. */
    private final boolean[] prefixes = new boolean[1 << 16];

    public ClassScan(Collection<String> names) {
        int size = Integer.highestOneBit(Math.max(4, names.size() * 4) - 1) << 1;
        table = new byte[size][];
        mask = size - 1;
        int min = Integer.MAX_VALUE;
        int max = 0;
        for (String name : names) {
            byte[] b = ascii(name);
            if (b.length == 0) {
                continue;
            }
            min = Math.min(min, b.length);
            max = Math.max(max, b.length);
            prefixes[prefix(b, 0, b.length)] = true;
            int slot = hash(b, 0, b.length) & mask;
            while (table[slot] != null && !Arrays.equals(table[slot], b)) {
                slot = (slot + 1) & mask;
            }
            table[slot] = b;
        }
        minLength = min;
        maxLength = max;
    }

    /** Whether the class declares a native method named as one of the names; false for a malformed class. */
    boolean hasNativeNamed(byte[] c) {
        try {
            return scan(c);
        } catch (RuntimeException e) {
            return false; // truncated or malformed: the JVM will reject it anyway
        }
    }

    private boolean scan(byte[] c) {
        if (c.length < 10 || u4(c, 0) != 0xCAFEBABE) {
            return false;
        }
        int count = u2(c, 8);
        int[] matched = null;
        int matches = 0;
        int p = 10;
        for (int i = 1; i < count; i++) {
            int tag = c[p] & 0xff;
            if (tag == 1) {
                int length = u2(c, p + 1);
                if (length >= minLength && length <= maxLength && prefixes[prefix(c, p + 3, length)]
                        && contains(c, p + 3, length)) {
                    if (matched == null) {
                        matched = new int[4];
                    } else if (matches == matched.length) {
                        matched = Arrays.copyOf(matched, matches * 2);
                    }
                    matched[matches++] = i;
                }
                p += 3 + length;
            } else {
                int size = entrySize(tag);
                p += size;
                if (tag == 5 || tag == 6) {
                    i++; // long and double take two slots
                }
            }
        }
        if (matches == 0) {
            return false;
        }
        p += 6; // access, this, super
        p += 2 + 2 * u2(c, p); // interfaces
        int fields = u2(c, p);
        p += 2;
        for (int f = 0; f < fields; f++) {
            p = skipMember(c, p);
        }
        int methods = u2(c, p);
        p += 2;
        for (int m = 0; m < methods; m++) {
            int access = u2(c, p);
            int name = u2(c, p + 2);
            if ((access & ACC_NATIVE) != 0) {
                for (int k = 0; k < matches; k++) {
                    if (matched[k] == name) {
                        return true;
                    }
                }
            }
            p = skipMember(c, p);
        }
        return false;
    }

    /**
     * Whether the class's constant pool holds one of the names at all (as a method it calls, or
     * declares): the filter for the call sites an attach rewrites. False for a malformed class.
     */
    public boolean namesAny(byte[] c) {
        try {
            if (c.length < 10 || u4(c, 0) != 0xCAFEBABE) {
                return false;
            }
            int count = u2(c, 8);
            int p = 10;
            for (int i = 1; i < count; i++) {
                int tag = c[p] & 0xff;
                if (tag == 1) {
                    int length = u2(c, p + 1);
                    if (length >= minLength && length <= maxLength && prefixes[prefix(c, p + 3, length)]
                            && contains(c, p + 3, length)) {
                        return true;
                    }
                    p += 3 + length;
                } else {
                    p += entrySize(tag);
                    if (tag == 5 || tag == 6) {
                        i++;
                    }
                }
            }
            return false;
        } catch (RuntimeException e) {
            return false;
        }
    }

    /**
     * The bridge a class with wrapped native methods belongs to, for the report: one that uses
     * JNA's {@code Native} (Native.register) is JNA direct mapping, one of org.bytedeco is
     * JavaCPP, any other is hand-written JNI.
     */
    public static String bridgeOf(byte[] c) {
        try {
            int count = u2(c, 8);
            int p = 10;
            boolean javacpp = false;
            for (int i = 1; i < count; i++) {
                int tag = c[p] & 0xff;
                if (tag == 1) {
                    int length = u2(c, p + 1);
                    if (length == JNA_NATIVE.length && Arrays.equals(c, p + 3, p + 3 + length, JNA_NATIVE, 0, length)) {
                        return NativeBridge.JNA_DIRECT;
                    }
                    if (length >= BYTEDECO.length
                            && Arrays.equals(c, p + 3, p + 3 + BYTEDECO.length, BYTEDECO, 0, BYTEDECO.length)) {
                        javacpp = true;
                    }
                    p += 3 + length;
                } else {
                    p += entrySize(tag);
                    if (tag == 5 || tag == 6) {
                        i++;
                    }
                }
            }
            return javacpp ? NativeBridge.JAVACPP : NativeBridge.JNI;
        } catch (RuntimeException e) {
            return NativeBridge.JNI;
        }
    }

    private boolean contains(byte[] c, int offset, int length) {
        int slot = hash(c, offset, length) & mask;
        for (byte[] name = table[slot]; name != null; name = table[slot = (slot + 1) & mask]) {
            if (name.length == length && Arrays.equals(c, offset, offset + length, name, 0, length)) {
                return true;
            }
        }
        return false;
    }

    private static int prefix(byte[] b, int offset, int length) {
        return length < 2 ? (b[offset] & 0xff) << 8 : ((b[offset] & 0xff) << 8) | (b[offset + 1] & 0xff);
    }

    private static int hash(byte[] b, int offset, int length) {
        int h = 0x811c9dc5;
        for (int i = offset; i < offset + length; i++) {
            h = (h ^ b[i]) * 0x01000193;
        }
        return h ^ (h >>> 16);
    }

    /** The size of a constant pool entry other than UTF-8, tag byte included. */
    private static int entrySize(int tag) {
        switch (tag) {
            case 7: case 8: case 16: case 19: case 20:
                return 3;
            case 15:
                return 4;
            case 3: case 4: case 9: case 10: case 11: case 12: case 17: case 18:
                return 5;
            case 5: case 6:
                return 9;
            default:
                throw new IllegalArgumentException("constant pool tag " + tag);
        }
    }

    /** Skips a field_info or method_info: access, name, descriptor, attributes. */
    private static int skipMember(byte[] c, int p) {
        int attributes = u2(c, p + 6);
        p += 8;
        for (int a = 0; a < attributes; a++) {
            p += 6 + u4(c, p + 2);
        }
        return p;
    }

    private static int u2(byte[] c, int p) {
        return ((c[p] & 0xff) << 8) | (c[p + 1] & 0xff);
    }

    private static int u4(byte[] c, int p) {
        return ((c[p] & 0xff) << 24) | ((c[p + 1] & 0xff) << 16) | ((c[p + 2] & 0xff) << 8) | (c[p + 3] & 0xff);
    }

    private static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
