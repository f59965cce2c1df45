package dev.ncclguard.bridge;

import dev.ncclguard.bootstrap.JnaHandle;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.IntBuffer;
import java.nio.LongBuffer;

/**
 * Reads handles, ints and bytes out of JNA argument objects (and JavaCPP's Pointer objects)
 * without linking JNA or JavaCPP: the application's JNA may be any 5.x in any class loader, so
 * each argument class gets a reader of its own classes, cached per class: for JNA the class
 * generated into its package (JnaHandles), else method handles. Every method answers 0/null on
 * anything it cannot read and never throws.
 */
public final class BindingValues {
    private static final ClassValue<Reader> READERS = new ClassValue<>() {
        @Override
        protected Reader computeValue(Class<?> type) {
            return Reader.of(type);
        }
    };

    private BindingValues() {
    }

    /** How to read arguments of this class; callers on the hot path keep it (see ArrayArgs). */
    public static Reader readerOf(Class<?> type) {
        return READERS.get(type);
    }

    /** A handle passed by value: Pointer, PointerType, Number. */
    public static long handle(Object arg) {
        return arg == null ? 0L : handle(READERS.get(arg.getClass()), arg);
    }

    /** {@link #handle(Object)} with the reader of {@code arg}'s class. */
    public static long handle(Reader reader, Object arg) {
        if (arg == null) {
            return 0L;
        }
        try {
            return reader.handle(arg);
        } catch (Throwable t) {
            return 0L;
        }
    }

    /** Element {@code i} of the handles an out-parameter holds once the call returned. */
    public static long handleOut(Object arg, int i) {
        return arg == null ? 0L : handleOut(READERS.get(arg.getClass()), arg, i);
    }

    public static long handleOut(Reader reader, Object arg, int i) {
        if (arg == null || i < 0) {
            return 0L;
        }
        try {
            return reader.longAt(arg, i);
        } catch (Throwable t) {
            return 0L;
        }
    }

    public static int intAt(Object arg, int i, int fallback) {
        return arg == null ? fallback : intAt(READERS.get(arg.getClass()), arg, i, fallback);
    }

    public static int intAt(Reader reader, Object arg, int i, int fallback) {
        if (arg == null || i < 0) {
            return fallback;
        }
        try {
            return reader.intAt(arg, i, fallback);
        } catch (Throwable t) {
            return fallback;
        }
    }

    public static byte[] bytes(Object arg, int length) {
        return arg == null ? null : bytes(READERS.get(arg.getClass()), arg, length);
    }

    public static byte[] bytes(Reader reader, Object arg, int length) {
        if (arg == null || length <= 0) {
            return null;
        }
        try {
            return reader.bytes(arg, length);
        } catch (Throwable t) {
            return null;
        }
    }

    /** The int status a native function returned, as JNA handed it back. */
    public static int status(Object result) {
        if (result instanceof Number) {
            return ((Number) result).intValue();
        }
        if (result instanceof Boolean) {
            return ((Boolean) result) ? 0 : 1;
        }
        // void, or a type mapper's own result type: treated as success (nothing better is known)
        return 0;
    }

    /** How to read one argument class. */
    public abstract static class Reader {
        long handle(Object arg) throws Throwable {
            return 0L;
        }

        long longAt(Object arg, int i) throws Throwable {
            return 0L;
        }

        int intAt(Object arg, int i, int fallback) throws Throwable {
            return fallback;
        }

        byte[] bytes(Object arg, int length) throws Throwable {
            return null;
        }

        static Reader of(Class<?> type) {
            if (Number.class.isAssignableFrom(type)) {
                return new NumberReader();
            }
            if (type == long[].class) {
                return new LongArrayReader();
            }
            if (type == int[].class) {
                return new IntArrayReader();
            }
            if (type == byte[].class) {
                return new ByteArrayReader();
            }
            if (type.isArray() && !type.getComponentType().isPrimitive()) {
                return new ObjectArrayReader();
            }
            if (ByteBuffer.class.isAssignableFrom(type) || LongBuffer.class.isAssignableFrom(type)
                    || IntBuffer.class.isAssignableFrom(type)) {
                return new BufferReader();
            }
            Class<?> segment = SegmentReader.SEGMENT;
            if (segment != null && segment.isAssignableFrom(type)) {
                return SegmentReader.of(segment);
            }
            Class<?> javacpp = ancestor(type, "org.bytedeco.javacpp.Pointer");
            if (javacpp != null) {
                return JavaCppReader.of(type, javacpp);
            }
            Class<?> pointer = ancestor(type, "com.sun.jna.Pointer");
            if (pointer != null) {
                return pointerReader(pointer, null);
            }
            // PointerType covers the ByReference family (PointerByReference, LongByReference, ...)
            // and custom handle types; Structure covers ncclUniqueId passed by value.
            for (String holder : new String[] {"com.sun.jna.PointerType", "com.sun.jna.Structure"}) {
                Class<?> base = ancestor(type, holder);
                if (base != null) {
                    Class<?> pointerClass = ancestor(findPointerClass(base), "com.sun.jna.Pointer");
                    if (pointerClass != null) {
                        return pointerReader(pointerClass, base);
                    }
                }
            }
            return new Reader() {
            };
        }

        /** The generated class of this JNA where there is one, else method handles. */
        static Reader pointerReader(Class<?> pointer, Class<?> holder) {
            JnaHandle generated = JnaHandles.generated(pointer);
            return generated != null ? new GeneratedPointerReader(generated) : PointerReader.of(pointer, holder);
        }

        private static Class<?> findPointerClass(Class<?> base) {
            try {
                return base.getMethod("getPointer").getReturnType();
            } catch (NoSuchMethodException e) {
                return Object.class;
            }
        }

        private static Class<?> ancestor(Class<?> type, String name) {
            for (Class<?> c = type; c != null; c = c.getSuperclass()) {
                if (c.getName().equals(name)) {
                    return c;
                }
            }
            return null;
        }
    }

    private static final class NumberReader extends Reader {
        @Override
        long handle(Object arg) {
            return ((Number) arg).longValue();
        }

        @Override
        long longAt(Object arg, int i) {
            return i == 0 ? ((Number) arg).longValue() : 0L;
        }

        @Override
        int intAt(Object arg, int i, int fallback) {
            return i == 0 ? ((Number) arg).intValue() : fallback;
        }
    }

    private static final class LongArrayReader extends Reader {
        @Override
        long longAt(Object arg, int i) {
            long[] a = (long[]) arg;
            return i < a.length ? a[i] : 0L;
        }
    }

    private static final class IntArrayReader extends Reader {
        @Override
        int intAt(Object arg, int i, int fallback) {
            int[] a = (int[]) arg;
            return i < a.length ? a[i] : fallback;
        }
    }

    private static final class ByteArrayReader extends Reader {
        @Override
        byte[] bytes(Object arg, int length) {
            byte[] a = (byte[]) arg;
            return a.length < length ? null : java.util.Arrays.copyOf(a, length);
        }
    }

    /** Pointer[] (ncclCommInitAll's comms) and other arrays of handle objects. */
    private static final class ObjectArrayReader extends Reader {
        @Override
        long longAt(Object arg, int i) {
            Object[] a = (Object[]) arg;
            return i < a.length ? BindingValues.handle(a[i]) : 0L;
        }
    }

    private static final class BufferReader extends Reader {
        @Override
        long longAt(Object arg, int i) {
            if (arg instanceof LongBuffer) {
                LongBuffer b = (LongBuffer) arg;
                return i < b.limit() ? b.get(i) : 0L;
            }
            if (arg instanceof ByteBuffer) {
                ByteBuffer b = ((ByteBuffer) arg).duplicate().order(ByteOrder.nativeOrder());
                return (i + 1) * 8 <= b.limit() ? b.getLong(i * 8) : 0L;
            }
            return 0L;
        }

        @Override
        int intAt(Object arg, int i, int fallback) {
            if (arg instanceof IntBuffer) {
                IntBuffer b = (IntBuffer) arg;
                return i < b.limit() ? b.get(i) : fallback;
            }
            if (arg instanceof ByteBuffer) {
                ByteBuffer b = ((ByteBuffer) arg).duplicate().order(ByteOrder.nativeOrder());
                return (i + 1) * 4 <= b.limit() ? b.getInt(i * 4) : fallback;
            }
            return fallback;
        }

        /** A struct a JNI binding passes as a ByteBuffer (ncclDevComm): its first bytes, from index 0. */
        @Override
        byte[] bytes(Object arg, int length) {
            if (!(arg instanceof ByteBuffer)) {
                return null;
            }
            ByteBuffer b = ((ByteBuffer) arg).duplicate();
            if (b.limit() < length) {
                return null;
            }
            byte[] out = new byte[length];
            b.position(0);
            b.get(out);
            return out;
        }
    }

    /**
     * A JNA Pointer (Memory too), or an object holding one (PointerType, ByReference, Structure):
     * {@code holder} names the holding class, null when the argument is the Pointer itself.
     */
    public static final class PointerReader extends Reader {
        /** The argument is the Pointer itself: no getPointer() to call first. */
        private final boolean direct;
        private final MethodHandle unwrap;
        private final MethodHandle nativeValue;
        private final MethodHandle getLong;
        private final MethodHandle getInt;
        private final MethodHandle getByteArray;

        private PointerReader(boolean direct, MethodHandle unwrap, MethodHandle nativeValue, MethodHandle getLong,
                              MethodHandle getInt, MethodHandle getByteArray) {
            this.direct = direct;
            this.unwrap = unwrap;
            this.nativeValue = nativeValue;
            this.getLong = getLong;
            this.getInt = getInt;
            this.getByteArray = getByteArray;
        }

        static Reader of(Class<?> pointer, Class<?> holder) {
            try {
                MethodHandles.Lookup lookup = MethodHandles.publicLookup();
                MethodHandle unwrap = holder == null
                        ? MethodHandles.identity(Object.class)
                        : lookup.findVirtual(holder, "getPointer", MethodType.methodType(pointer))
                                .asType(MethodType.methodType(Object.class, Object.class));
                MethodHandle nativeValue = lookup.findStatic(pointer, "nativeValue",
                        MethodType.methodType(long.class, pointer))
                        .asType(MethodType.methodType(long.class, Object.class));
                MethodHandle getLong = lookup.findVirtual(pointer, "getLong",
                        MethodType.methodType(long.class, long.class))
                        .asType(MethodType.methodType(long.class, Object.class, long.class));
                MethodHandle getInt = lookup.findVirtual(pointer, "getInt",
                        MethodType.methodType(int.class, long.class))
                        .asType(MethodType.methodType(int.class, Object.class, long.class));
                MethodHandle getByteArray = lookup.findVirtual(pointer, "getByteArray",
                        MethodType.methodType(byte[].class, long.class, int.class))
                        .asType(MethodType.methodType(byte[].class, Object.class, long.class, int.class));
                return new PointerReader(holder == null, unwrap, nativeValue, getLong, getInt, getByteArray);
            } catch (ReflectiveOperationException | RuntimeException e) {
                return new Reader() {
                };
            }
        }

        private Object pointer(Object arg) throws Throwable {
            return direct ? arg : (Object) unwrap.invokeExact(arg);
        }

        @Override
        long handle(Object arg) throws Throwable {
            Object p = pointer(arg);
            return p == null ? 0L : (long) nativeValue.invokeExact(p);
        }

        @Override
        long longAt(Object arg, int i) throws Throwable {
            Object p = pointer(arg);
            return p == null || (long) nativeValue.invokeExact(p) == 0L
                    ? 0L : (long) getLong.invokeExact(p, (long) i * 8);
        }

        @Override
        int intAt(Object arg, int i, int fallback) throws Throwable {
            Object p = pointer(arg);
            return p == null || (long) nativeValue.invokeExact(p) == 0L
                    ? fallback : (int) getInt.invokeExact(p, (long) i * 4);
        }

        @Override
        byte[] bytes(Object arg, int length) throws Throwable {
            Object p = pointer(arg);
            return p == null || (long) nativeValue.invokeExact(p) == 0L
                    ? null : (byte[]) getByteArray.invokeExact(p, 0L, length);
        }
    }

    /**
     * A JNA Pointer, or an object holding one, read through the class generated into that JNA's
     * package (JnaHandles): plain calls, so the first calls of a JVM spin no method handle class
     * (some 20 with the method handles of {@link PointerReader}), and the JIT inlines them.
     */
    public static final class GeneratedPointerReader extends Reader {
        private final JnaHandle jna;

        GeneratedPointerReader(JnaHandle jna) {
            this.jna = jna;
        }

        @Override
        long handle(Object arg) {
            Object p = jna.pointer(arg);
            return p == null ? 0L : jna.of(p);
        }

        @Override
        long longAt(Object arg, int i) {
            Object p = jna.pointer(arg);
            return p == null || jna.of(p) == 0L ? 0L : jna.getLong(p, (long) i * 8);
        }

        @Override
        int intAt(Object arg, int i, int fallback) {
            Object p = jna.pointer(arg);
            return p == null || jna.of(p) == 0L ? fallback : jna.getInt(p, (long) i * 4);
        }

        @Override
        byte[] bytes(Object arg, int length) {
            Object p = jna.pointer(arg);
            return p == null || jna.of(p) == 0L ? null : jna.getByteArray(p, 0L, length);
        }
    }

    /**
     * A JavaCPP {@code org.bytedeco.javacpp.Pointer}: its {@code address()} is the handle passed
     * by value, and also what JavaCPP writes back into an out-parameter passed as such an object
     * (@ByPtrPtr). PointerPointer, LongPointer and IntPointer are read element by element;
     * bytes (a struct by value such as ncclUniqueId) through a BytePointer over the same memory.
     */
    private static final class JavaCppReader extends Reader {
        private final MethodHandle address;
        private final MethodHandle element;
        private final MethodHandle intElement;
        private final MethodHandle bytePointer;
        private final MethodHandle getBytes;

        private JavaCppReader(MethodHandle address, MethodHandle element, MethodHandle intElement,
                              MethodHandle bytePointer, MethodHandle getBytes) {
            this.address = address;
            this.element = element;
            this.intElement = intElement;
            this.bytePointer = bytePointer;
            this.getBytes = getBytes;
        }

        static Reader of(Class<?> type, Class<?> pointer) {
            try {
                MethodHandles.Lookup lookup = MethodHandles.publicLookup();
                ClassLoader loader = pointer.getClassLoader();
                MethodHandle address = lookup.findVirtual(pointer, "address", MethodType.methodType(long.class))
                        .asType(MethodType.methodType(long.class, Object.class));
                MethodHandle element = null;
                MethodHandle intElement = null;
                Class<?> pointerPointer = Reader.ancestor(type, "org.bytedeco.javacpp.PointerPointer");
                Class<?> longPointer = Reader.ancestor(type, "org.bytedeco.javacpp.LongPointer");
                Class<?> intPointer = Reader.ancestor(type, "org.bytedeco.javacpp.IntPointer");
                if (pointerPointer != null) {
                    element = MethodHandles.filterReturnValue(
                            lookup.findVirtual(pointerPointer, "get", MethodType.methodType(pointer, long.class)),
                            address.asType(MethodType.methodType(long.class, pointer)))
                            .asType(MethodType.methodType(long.class, Object.class, long.class));
                } else if (longPointer != null) {
                    element = lookup.findVirtual(longPointer, "get", MethodType.methodType(long.class, long.class))
                            .asType(MethodType.methodType(long.class, Object.class, long.class));
                } else if (intPointer != null) {
                    intElement = lookup.findVirtual(intPointer, "get", MethodType.methodType(int.class, long.class))
                            .asType(MethodType.methodType(int.class, Object.class, long.class));
                }
                Class<?> bytes = Class.forName("org.bytedeco.javacpp.BytePointer", false, loader);
                MethodHandle bytePointer = lookup.findConstructor(bytes, MethodType.methodType(void.class, pointer))
                        .asType(MethodType.methodType(Object.class, Object.class));
                MethodHandle getBytes = lookup.findVirtual(bytes, "get",
                        MethodType.methodType(bytes, byte[].class, int.class, int.class))
                        .asType(MethodType.methodType(void.class, Object.class, byte[].class, int.class, int.class));
                return new JavaCppReader(address, element, intElement, bytePointer, getBytes);
            } catch (ReflectiveOperationException | RuntimeException e) {
                return new Reader() {
                };
            }
        }

        @Override
        long handle(Object arg) throws Throwable {
            return (long) address.invokeExact(arg);
        }

        @Override
        long longAt(Object arg, int i) throws Throwable {
            if ((long) address.invokeExact(arg) == 0L) {
                return 0L;
            }
            if (element != null) {
                return (long) element.invokeExact(arg, (long) i);
            }
            // an object JavaCPP filled in place: its own address is the one handle written
            return i == 0 ? (long) address.invokeExact(arg) : 0L;
        }

        @Override
        int intAt(Object arg, int i, int fallback) throws Throwable {
            if (intElement == null || (long) address.invokeExact(arg) == 0L) {
                return fallback;
            }
            return (int) intElement.invokeExact(arg, (long) i);
        }

        @Override
        byte[] bytes(Object arg, int length) throws Throwable {
            if ((long) address.invokeExact(arg) == 0L) {
                return null;
            }
            byte[] out = new byte[length];
            getBytes.invokeExact((Object) bytePointer.invokeExact(arg), out, 0, length);
            return out;
        }
    }

    /**
     * A {@code java.lang.foreign.MemorySegment} (JDK 22+): its address is the handle passed by
     * value; an out-parameter or a struct by value is read from the segment's own bytes, within
     * its size (a zero-length segment reads as nothing).
     */
    private static final class SegmentReader extends Reader {
        static final Class<?> SEGMENT = load("java.lang.foreign.MemorySegment");

        private final MethodHandle address;
        private final MethodHandle size;
        private final MethodHandle getLong;
        private final MethodHandle getInt;
        private final MethodHandle toBytes;

        private SegmentReader(MethodHandle address, MethodHandle size, MethodHandle getLong, MethodHandle getInt,
                              MethodHandle toBytes) {
            this.address = address;
            this.size = size;
            this.getLong = getLong;
            this.getInt = getInt;
            this.toBytes = toBytes;
        }

        private static Class<?> load(String name) {
            try {
                return Class.forName(name, false, null);
            } catch (ClassNotFoundException | LinkageError e) {
                return null;
            }
        }

        static Reader of(Class<?> segment) {
            try {
                MethodHandles.Lookup lookup = MethodHandles.publicLookup();
                Class<?> layouts = Class.forName("java.lang.foreign.ValueLayout", false, null);
                Class<?> ofLong = Class.forName("java.lang.foreign.ValueLayout$OfLong", false, null);
                Class<?> ofInt = Class.forName("java.lang.foreign.ValueLayout$OfInt", false, null);
                Class<?> ofByte = Class.forName("java.lang.foreign.ValueLayout$OfByte", false, null);
                MethodType toObject = MethodType.methodType(long.class, Object.class);
                MethodHandle address = lookup.findVirtual(segment, "address", MethodType.methodType(long.class))
                        .asType(toObject);
                MethodHandle size = lookup.findVirtual(segment, "byteSize", MethodType.methodType(long.class))
                        .asType(toObject);
                MethodHandle getLong = MethodHandles.insertArguments(lookup.findVirtual(segment, "get",
                        MethodType.methodType(long.class, ofLong, long.class)), 1, layouts.getField("JAVA_LONG").get(null))
                        .asType(MethodType.methodType(long.class, Object.class, long.class));
                MethodHandle getInt = MethodHandles.insertArguments(lookup.findVirtual(segment, "get",
                        MethodType.methodType(int.class, ofInt, long.class)), 1, layouts.getField("JAVA_INT").get(null))
                        .asType(MethodType.methodType(int.class, Object.class, long.class));
                MethodHandle slice = lookup.findVirtual(segment, "asSlice",
                        MethodType.methodType(segment, long.class, long.class));
                MethodHandle toArray = MethodHandles.insertArguments(lookup.findVirtual(segment, "toArray",
                        MethodType.methodType(byte[].class, ofByte)), 1, layouts.getField("JAVA_BYTE").get(null));
                MethodHandle toBytes = MethodHandles.filterReturnValue(slice, toArray)
                        .asType(MethodType.methodType(byte[].class, Object.class, long.class, long.class));
                return new SegmentReader(address, size, getLong, getInt, toBytes);
            } catch (ReflectiveOperationException | RuntimeException e) {
                return new Reader() {
                };
            }
        }

        @Override
        long handle(Object arg) throws Throwable {
            return (long) address.invokeExact(arg);
        }

        @Override
        long longAt(Object arg, int i) throws Throwable {
            long offset = (long) i * 8;
            return offset + 8 <= (long) size.invokeExact(arg) ? (long) getLong.invokeExact(arg, offset) : 0L;
        }

        @Override
        int intAt(Object arg, int i, int fallback) throws Throwable {
            long offset = (long) i * 4;
            return offset + 4 <= (long) size.invokeExact(arg) ? (int) getInt.invokeExact(arg, offset) : fallback;
        }

        @Override
        byte[] bytes(Object arg, int length) throws Throwable {
            return length <= (long) size.invokeExact(arg) ? (byte[]) toBytes.invokeExact(arg, 0L, (long) length) : null;
        }
    }
}
