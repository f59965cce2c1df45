package dev.ncclguard.weave;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * Small edits of a class file without ASM: constant pool entries appended, a few instructions put
 * at the entry of one method, a method renamed, a straight-line method added. It is what the
 * agent's load-time hooks need, and loading it costs one class where ASM costs some thirty (about
 * 30 ms at JVM start). Anything it does not understand makes it refuse ({@link Unsupported}); the
 * caller then leaves the class as it was.
 *
 * <p>Code put at a method's entry shifts the rest by a multiple of 4 bytes (padded with NOPs), so
 * switch alignment holds, and every offset that names a position in the code is moved with it:
 * exception handlers, line and local variable tables, the first stack map frame and the
 * positions of uninitialized objects in every frame. Jumps are relative and stay as they are.
 */
public final class ClassEdit {
    /** A class file this editor cannot edit safely. */
    public static final class Unsupported extends Exception {
        private static final long serialVersionUID = 1L;

        Unsupported(String message) {
            super(message, null, false, false);
        }
    }

    public static final int ACC_PUBLIC = 0x0001;
    public static final int ACC_PRIVATE = 0x0002;
    public static final int ACC_PROTECTED = 0x0004;
    public static final int ACC_STATIC = 0x0008;
    public static final int ACC_NATIVE = 0x0100;
    public static final int ACC_ABSTRACT = 0x0400;
    public static final int ACC_SYNTHETIC = 0x1000;

    private final byte[] b;
    private final int cpCount;
    /** Offset of each constant pool entry's tag; 0 for the unusable slots (index 0, after a long or double). */
    private final int[] cp;
    private final int cpEnd;
    private final int thisClass;
    private final int fieldsStart;
    private final int methodsCountOffset;
    /** Offset of each method_info, then the end of the last one. */
    private final int[] methods;

    private final ByteArrayOutputStream added = new ByteArrayOutputStream();
    private int nextIndex;
    /** Replacement bytes per method (renamed or with new code), or null where it is copied as it is. */
    private final byte[][] replaced;
    private final ByteArrayOutputStream newMethods = new ByteArrayOutputStream();
    private int newMethodCount;

    public ClassEdit(byte[] classfile) throws Unsupported {
        this.b = classfile;
        try {
            if (u4(0) != 0xCAFEBABE) {
                throw new Unsupported("not a class file");
            }
            cpCount = u2(8);
            cp = new int[cpCount];
            int p = 10;
            for (int i = 1; i < cpCount; i++) {
                cp[i] = p;
                int tag = b[p] & 0xff;
                switch (tag) {
                    case 1:
                        p += 3 + u2(p + 1);
                        break;
                    case 7: case 8: case 16: case 19: case 20:
                        p += 3;
                        break;
                    case 15:
                        p += 4;
                        break;
                    case 3: case 4: case 9: case 10: case 11: case 12: case 17: case 18:
                        p += 5;
                        break;
                    case 5: case 6:
                        p += 9;
                        i++; // takes two slots
                        break;
                    default:
                        throw new Unsupported("constant pool tag " + tag);
                }
            }
            cpEnd = p;
            nextIndex = cpCount;
            thisClass = u2(p + 2);
            p += 6;
            p += 2 + 2 * u2(p);
            fieldsStart = p;
            int fields = u2(p);
            p += 2;
            for (int f = 0; f < fields; f++) {
                p = memberEnd(p);
            }
            methodsCountOffset = p;
            int count = u2(p);
            p += 2;
            methods = new int[count + 1];
            for (int m = 0; m < count; m++) {
                methods[m] = p;
                p = memberEnd(p);
            }
            methods[count] = p;
            if (p > b.length) {
                throw new Unsupported("truncated class file");
            }
            replaced = new byte[count][];
        } catch (ArrayIndexOutOfBoundsException e) {
            throw new Unsupported("truncated class file");
        }
    }

    // --- reading ---

    /** The index of the method named {@code name} with descriptor {@code desc}, or -1. */
    public int method(String name, String desc) {
        for (int m = 0; m < methods.length - 1; m++) {
            int at = methods[m];
            if (utf8Is(u2(at + 2), name) && utf8Is(u2(at + 4), desc)) {
                return m;
            }
        }
        return -1;
    }

    public int methodAccess(int m) {
        return u2(methods[m]);
    }

    public int methodCount() {
        return methods.length - 1;
    }

    public String methodName(int m) {
        return utf8(u2(methods[m] + 2));
    }

    /** Whether the class declares a field {@code name} of type {@code desc}. */
    public boolean hasField(String name, String desc) {
        int p = fieldsStart;
        int fields = u2(p);
        p += 2;
        for (int f = 0; f < fields; f++) {
            if (utf8Is(u2(p + 2), name) && utf8Is(u2(p + 4), desc)) {
                return true;
            }
            p = memberEnd(p);
        }
        return false;
    }

    /** The class's own name, internal form. */
    public String className() {
        return utf8(u2(cp[thisClass] + 1));
    }

    // --- constant pool additions (always new entries: duplicates are legal and this stays simple) ---

    public int utf8(String s) throws Unsupported {
        byte[] bytes = s.getBytes(StandardCharsets.UTF_8); // the names used here are ASCII: no modified UTF-8 needed
        added.write(1);
        added.write(bytes.length >>> 8);
        added.write(bytes.length);
        added.write(bytes, 0, bytes.length);
        return take(1);
    }

    public int classRef(String internalName) throws Unsupported {
        int name = utf8(internalName);
        return entry(7, name);
    }

    public int methodRef(String owner, String name, String desc) throws Unsupported {
        return memberRef(10, owner == null ? thisClass : classRef(owner), name, desc);
    }

    /** A field of this class. */
    public int fieldRef(String name, String desc) throws Unsupported {
        return memberRef(9, thisClass, name, desc);
    }

    private int memberRef(int tag, int owner, String name, String desc) throws Unsupported {
        int nameAndType = entry(12, utf8(name), utf8(desc));
        return entry(tag, owner, nameAndType);
    }

    private int entry(int tag, int a) throws Unsupported {
        added.write(tag);
        added.write(a >>> 8);
        added.write(a);
        return take(1);
    }

    private int entry(int tag, int a, int c) throws Unsupported {
        added.write(tag);
        added.write(a >>> 8);
        added.write(a);
        added.write(c >>> 8);
        added.write(c);
        return take(1);
    }

    private int take(int slots) throws Unsupported {
        int index = nextIndex;
        nextIndex += slots;
        if (nextIndex > 0xFFFF) {
            throw new Unsupported("constant pool full");
        }
        return index;
    }

    // --- edits ---

    /**
     * Puts {@code code} at the entry of method {@code m}. The code must not jump, must leave the
     * operand stack empty and may use at most {@code maxStack} slots of it.
     */
    public void prefixCode(int m, byte[] code, int maxStack) throws Unsupported {
        int start = methods[m];
        ByteArrayOutputStream out = new ByteArrayOutputStream(methods[m + 1] - start + 64);
        out.write(b, start, 6);
        int attributes = u2(start + 6);
        writeU2(out, attributes);
        int p = start + 8;
        boolean patched = false;
        for (int a = 0; a < attributes; a++) {
            int length = u4(p + 2);
            if (utf8Is(u2(p), "Code")) {
                writeCode(out, p, code, maxStack);
                patched = true;
            } else {
                out.write(b, p, 6 + length);
            }
            p += 6 + length;
        }
        if (!patched) {
            throw new Unsupported("method has no code");
        }
        replaced[m] = out.toByteArray();
    }

    /** Gives method {@code m} a new name and access flags; its descriptor, code and attributes stay. */
    public void rename(int m, String newName, int access) throws Unsupported {
        if (replaced[m] != null) {
            throw new Unsupported("method already edited");
        }
        int start = methods[m];
        byte[] copy = Arrays.copyOfRange(b, start, methods[m + 1]);
        int name = utf8(newName);
        copy[0] = (byte) (access >>> 8);
        copy[1] = (byte) access;
        copy[2] = (byte) (name >>> 8);
        copy[3] = (byte) name;
        replaced[m] = copy;
    }

    /**
     * Adds a method whose code has no jumps and no exception handlers, so it needs no stack map
     * frames; {@code nameIndex} and {@code descIndex} may be existing constant pool entries.
     */
    public void addMethod(int access, int nameIndex, int descIndex, int maxStack, int maxLocals, byte[] code)
            throws Unsupported {
        int codeName = utf8("Code");
        writeU2(newMethods, access);
        writeU2(newMethods, nameIndex);
        writeU2(newMethods, descIndex);
        writeU2(newMethods, 1);
        writeU2(newMethods, codeName);
        writeU4(newMethods, 12 + code.length);
        writeU2(newMethods, maxStack);
        writeU2(newMethods, maxLocals);
        writeU4(newMethods, code.length);
        newMethods.write(code, 0, code.length);
        writeU2(newMethods, 0); // exception table
        writeU2(newMethods, 0); // attributes
        newMethodCount++;
    }

    /** The name and descriptor indexes of method {@code m}, for a method added beside it. */
    public int nameIndex(int m) {
        return u2(methods[m] + 2);
    }

    public int descIndex(int m) {
        return u2(methods[m] + 4);
    }

    public byte[] toByteArray() throws Unsupported {
        int methodCount = methods.length - 1 + newMethodCount;
        if (methodCount > 0xFFFF) {
            throw new Unsupported("too many methods");
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream(b.length + added.size() + newMethods.size() + 256);
        out.write(b, 0, 8);
        writeU2(out, nextIndex);
        out.write(b, 10, cpEnd - 10);
        out.write(added.toByteArray(), 0, added.size());
        out.write(b, cpEnd, methodsCountOffset - cpEnd);
        writeU2(out, methodCount);
        for (int m = 0; m < methods.length - 1; m++) {
            if (replaced[m] != null) {
                out.write(replaced[m], 0, replaced[m].length);
            } else {
                out.write(b, methods[m], methods[m + 1] - methods[m]);
            }
        }
        out.write(newMethods.toByteArray(), 0, newMethods.size());
        int end = methods[methods.length - 1];
        out.write(b, end, b.length - end);
        return out.toByteArray();
    }

    // --- the Code attribute with a prefix ---

    private void writeCode(ByteArrayOutputStream out, int attr, byte[] prefix, int prefixStack) throws Unsupported {
        int shift = (prefix.length + 3) & ~3; // a multiple of 4: tableswitch and lookupswitch padding holds
        int p = attr + 6;
        int maxStack = Math.max(u2(p), prefixStack);
        int maxLocals = u2(p + 2);
        int codeLength = u4(p + 4);
        if (codeLength + shift > 0xFFFF) {
            throw new Unsupported("code too long");
        }
        int code = p + 8;
        int handlers = code + codeLength;
        int handlerCount = u2(handlers);
        ByteArrayOutputStream body = new ByteArrayOutputStream(u4(attr + 2) + shift + 16);
        writeU2(body, maxStack);
        writeU2(body, maxLocals);
        writeU4(body, codeLength + shift);
        body.write(prefix, 0, prefix.length);
        for (int i = prefix.length; i < shift; i++) {
            body.write(0); // nop
        }
        body.write(b, code, codeLength);
        writeU2(body, handlerCount);
        int h = handlers + 2;
        for (int i = 0; i < handlerCount; i++, h += 8) {
            writeU2(body, u2(h) + shift);
            writeU2(body, u2(h + 2) + shift);
            writeU2(body, u2(h + 4) + shift);
            writeU2(body, u2(h + 6));
        }
        int attributes = u2(h);
        writeU2(body, attributes);
        int a = h + 2;
        for (int i = 0; i < attributes; i++) {
            int length = u4(a + 2);
            int name = u2(a);
            if (utf8Is(name, "LineNumberTable")) {
                writeShiftedTable(body, a, 4, shift);
            } else if (utf8Is(name, "LocalVariableTable") || utf8Is(name, "LocalVariableTypeTable")) {
                writeShiftedTable(body, a, 10, shift);
            } else if (utf8Is(name, "StackMapTable")) {
                writeStackMap(body, a, shift);
            } else {
                // type annotations and unknown attributes may hold code offsets this editor does not know
                throw new Unsupported("code attribute " + utf8(name));
            }
            a += 6 + length;
        }
        byte[] bytes = body.toByteArray();
        writeU2(out, u2(attr));
        writeU4(out, bytes.length);
        out.write(bytes, 0, bytes.length);
    }

    /** A table of entries of {@code size} bytes whose first u2 is a code offset. */
    private void writeShiftedTable(ByteArrayOutputStream out, int attr, int size, int shift) {
        int count = u2(attr + 6);
        out.write(b, attr, 8);
        int e = attr + 8;
        for (int i = 0; i < count; i++, e += size) {
            writeU2(out, u2(e) + shift);
            out.write(b, e + 2, size - 2);
        }
    }

    private void writeStackMap(ByteArrayOutputStream out, int attr, int shift) throws Unsupported {
        int count = u2(attr + 6);
        ByteArrayOutputStream frames = new ByteArrayOutputStream(u4(attr + 2) + 8);
        writeU2(frames, count);
        int p = attr + 8;
        for (int i = 0; i < count; i++) {
            int type = b[p] & 0xff;
            int delta;
            int rest;
            if (type < 64) {
                delta = type;
                rest = p + 1;
                if (i == 0) {
                    delta += shift;
                    if (delta < 64) {
                        frames.write(delta);
                    } else {
                        frames.write(251); // same_frame_extended
                        writeU2(frames, delta);
                    }
                } else {
                    frames.write(type);
                }
                p = rest;
            } else if (type < 128) {
                delta = type - 64;
                if (i == 0 && delta + shift >= 64) {
                    frames.write(247); // same_locals_1_stack_item_extended
                    writeU2(frames, delta + shift);
                } else {
                    frames.write(i == 0 ? 64 + delta + shift : type);
                }
                p = copyTypes(frames, p + 1, 1, shift);
            } else if (type < 247) {
                throw new Unsupported("stack map frame type " + type);
            } else {
                delta = u2(p + 1) + (i == 0 ? shift : 0);
                frames.write(type);
                writeU2(frames, delta);
                p += 3;
                if (type == 247) {
                    p = copyTypes(frames, p, 1, shift);
                } else if (type >= 252 && type <= 254) {
                    p = copyTypes(frames, p, type - 251, shift);
                } else if (type == 255) {
                    int locals = u2(p);
                    writeU2(frames, locals);
                    p = copyTypes(frames, p + 2, locals, shift);
                    int stack = u2(p);
                    writeU2(frames, stack);
                    p = copyTypes(frames, p + 2, stack, shift);
                }
            }
        }
        if (p != attr + 6 + u4(attr + 2)) {
            throw new Unsupported("stack map table of unexpected length");
        }
        byte[] bytes = frames.toByteArray();
        writeU2(out, u2(attr));
        writeU4(out, bytes.length);
        out.write(bytes, 0, bytes.length);
    }

    /** Copies {@code n} verification types from {@code p}, moving uninitialized(offset) ones; returns the end. */
    private int copyTypes(ByteArrayOutputStream out, int p, int n, int shift) throws Unsupported {
        for (int i = 0; i < n; i++) {
            int tag = b[p] & 0xff;
            out.write(tag);
            if (tag == 7) {
                out.write(b, p + 1, 2);
                p += 3;
            } else if (tag == 8) {
                writeU2(out, u2(p + 1) + shift);
                p += 3;
            } else if (tag <= 6) {
                p += 1;
            } else {
                throw new Unsupported("verification type " + tag);
            }
        }
        return p;
    }

    // --- bytes ---

    private int memberEnd(int p) {
        int attributes = u2(p + 6);
        p += 8;
        for (int a = 0; a < attributes; a++) {
            p += 6 + u4(p + 2);
        }
        return p;
    }

    private boolean utf8Is(int index, String s) {
        if (index <= 0 || index >= cpCount || cp[index] == 0 || b[cp[index]] != 1) {
            return false;
        }
        int at = cp[index];
        int length = u2(at + 1);
        if (length != s.length()) {
            return false;
        }
        for (int i = 0; i < length; i++) {
            if (b[at + 3 + i] != (byte) s.charAt(i)) { // the names compared here are ASCII
                return false;
            }
        }
        return true;
    }

    private String utf8(int index) {
        int at = cp[index];
        return new String(b, at + 3, u2(at + 1), StandardCharsets.UTF_8);
    }

    private int u2(int p) {
        return ((b[p] & 0xff) << 8) | (b[p + 1] & 0xff);
    }

    private int u4(int p) {
        return ((b[p] & 0xff) << 24) | ((b[p + 1] & 0xff) << 16) | ((b[p + 2] & 0xff) << 8) | (b[p + 3] & 0xff);
    }

    private static void writeU2(ByteArrayOutputStream out, int v) {
        out.write(v >>> 8);
        out.write(v);
    }

    private static void writeU4(ByteArrayOutputStream out, int v) {
        out.write(v >>> 24);
        out.write(v >>> 16);
        out.write(v >>> 8);
        out.write(v);
    }
}
