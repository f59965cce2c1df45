package dev.ncclguard.bridge.natives;

import dev.ncclguard.track.NativeAccess;
import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import net.bytebuddy.jar.asm.Type;

/**
 * Exit-time calls (queries, cleanup) through the application's own wrapped native methods: the
 * renamed native of a method named as the C function (or mapped to it by the bindings file), in
 * a class of the same class loader, called directly so that the wrapper does not see the agent's
 * call. It reaches the very library instance the application bound. A handle is turned into the
 * method's parameter type: long, a JNA Pointer, or a JavaCPP Pointer object at that address.
 */
final class NativeMethodAccess implements NativeAccess {
    private final NativeBridge bridge;
    private final NativeSite origin;
    /** Symbol to the method chosen for it, found on first use. */
    private final Map<String, Target> targets = new ConcurrentHashMap<>();

    NativeMethodAccess(NativeBridge bridge, NativeSite origin) {
        this.bridge = bridge;
        this.origin = origin;
    }

    @Override
    public String library() {
        return origin.bridge + " methods of " + origin.owner;
    }

    @Override
    public int call(String symbol, Object... args) {
        Target target = targets.get(symbol);
        if (target == null) {
            target = find(symbol, args.length);
            targets.put(symbol, target);
        }
        return target.call(args);
    }

    /** The site to call for {@code symbol}: the origin's class first, then its bridge, then any. */
    private Target find(String symbol, int argc) {
        List<NativeSite> candidates = new ArrayList<>();
        ClassLoader loader = origin.loader();
        for (NativeSite s : bridge.sitesOf(loader)) {
            if (s.fn.symbol().equals(symbol) && !s.handleIsResult()) {
                candidates.add(s);
            }
        }
        candidates.sort((a, b) -> Integer.compare(rank(a), rank(b)));
        String why = "no wrapped native method for " + symbol + " next to " + origin.owner;
        for (NativeSite s : candidates) {
            try {
                return new Target(bridge, s, bridge.prefix(), argc);
            } catch (ReflectiveOperationException | RuntimeException e) {
                why = "cannot call " + s + ": " + e;
            }
        }
        String reason = why;
        return new Target(reason);
    }

    private int rank(NativeSite s) {
        return s.owner.equals(origin.owner) ? 0 : s.bridge.equals(origin.bridge) ? 1 : 2;
    }

    @Override
    public String toString() {
        return library();
    }

    /** One callable renamed native and how to build its arguments, or why there is none. */
    private static final class Target {
        private final NativeSite site;
        private final Method method;
        /** For each Java argument: the C argument position it takes. */
        private final int[] fromC;
        private final Converter[] converters;
        private final String unavailable;
        private final NativeBridge receivers;

        Target(String unavailable) {
            this.receivers = null;
            this.site = null;
            this.method = null;
            this.fromC = null;
            this.converters = null;
            this.unavailable = unavailable;
        }

        Target(NativeBridge bridge, NativeSite site, String prefix, int argc) throws ReflectiveOperationException {
            this.receivers = bridge;
            this.site = site;
            this.unavailable = null;
            Class<?> owner = Class.forName(site.owner, false, site.loader());
            // the renamed native bypasses the wrapper; an unwrapped one is outside the rewritten call sites
            String name = site.renamed ? prefix + site.method : site.method;
            Method found = null;
            for (Method m : owner.getDeclaredMethods()) {
                if (m.getName().equals(name) && Type.getMethodDescriptor(m).equals(site.descriptor)) {
                    found = m;
                }
            }
            if (found == null) {
                throw new NoSuchMethodException(site.owner + "." + name + site.descriptor);
            }
            found.setAccessible(true);
            this.method = found;
            Class<?>[] types = found.getParameterTypes();
            this.fromC = new int[types.length];
            this.converters = new Converter[types.length];
            for (int j = 0; j < types.length; j++) {
                int c = -1;
                for (int k = 0; k < site.cToJava.length && k < argc; k++) {
                    if (site.cToJava[k] == j) {
                        c = k;
                    }
                }
                if (c < 0) {
                    throw new IllegalArgumentException("argument " + j + " of " + site + " has no value at exit");
                }
                fromC[j] = c;
                converters[j] = Converter.of(types[j]);
            }
        }

        int call(Object[] args) {
            if (unavailable != null) {
                throw new IllegalStateException(unavailable);
            }
            Object receiver = null;
            if (!site.isStatic) {
                receiver = receivers.receiverOf(site);
                if (receiver == null) {
                    throw new IllegalStateException("no live instance of " + site.owner + " to call " + site.method);
                }
            }
            try {
                Object[] javaArgs = new Object[fromC.length];
                for (int j = 0; j < fromC.length; j++) {
                    Object a = args[fromC[j]];
                    javaArgs[j] = a instanceof byte[] struct ? converters[j].struct(struct) : converters[j].convert((Number) a);
                }
                Object result = method.invoke(receiver, javaArgs);
                return result instanceof Number ? ((Number) result).intValue() : 0;
            } catch (InvocationTargetException e) {
                Throwable cause = e.getCause();
                throw cause instanceof RuntimeException ? (RuntimeException) cause
                        : new IllegalStateException(site.method + " threw " + cause, cause);
            } catch (ReflectiveOperationException e) {
                throw new IllegalStateException("cannot call " + site + ": " + e, e);
            }
        }
    }

    /** Turns a handle or an int into a parameter of one Java type. */
    @FunctionalInterface
    private interface Converter {
        Object convert(Number value) throws ReflectiveOperationException;

        /**
         * A struct passed by pointer (its bytes): a byte[] parameter takes them as they are, a
         * pointer object a native copy of them (JNA's Memory, JavaCPP's BytePointer).
         */
        default Object struct(byte[] bytes) throws ReflectiveOperationException {
            throw new IllegalArgumentException("cannot pass a struct (" + bytes.length + " bytes) as this parameter");
        }

        static Converter of(Class<?> type) throws ReflectiveOperationException {
            if (type == long.class) {
                return Number::longValue;
            }
            if (type == int.class) {
                return Number::intValue;
            }
            if (type == byte[].class) {
                return new Converter() {
                    @Override
                    public Object convert(Number value) {
                        throw new IllegalArgumentException("cannot pass a handle or an int as byte[]");
                    }

                    @Override
                    public Object struct(byte[] bytes) {
                        return bytes.clone();
                    }
                };
            }
            Class<?> jna = ancestor(type, "com.sun.jna.Pointer");
            if (jna != null) {
                Constructor<?> make = type.getConstructor(long.class);
                Class<?> memoryClass = Class.forName("com.sun.jna.Memory", false, type.getClassLoader());
                boolean memoryFits = type.isAssignableFrom(memoryClass);
                return new Converter() {
                    @Override
                    public Object convert(Number v) throws ReflectiveOperationException {
                        return v.longValue() == 0 ? null : make.newInstance(v.longValue());
                    }

                    @Override
                    public Object struct(byte[] bytes) throws ReflectiveOperationException {
                        if (!memoryFits) {
                            return Converter.super.struct(bytes);
                        }
                        Object memory = memoryClass.getConstructor(long.class).newInstance((long) bytes.length);
                        memoryClass.getMethod("write", long.class, byte[].class, int.class, int.class)
                                .invoke(memory, 0L, bytes, 0, bytes.length);
                        return memory;
                    }
                };
            }
            Class<?> pointerType = ancestor(type, "com.sun.jna.PointerType");
            if (pointerType != null) {
                Class<?> pointer = Class.forName("com.sun.jna.Pointer", false, type.getClassLoader());
                Constructor<?> makePointer = pointer.getConstructor(long.class);
                Constructor<?> make = type.getConstructor();
                Method set = pointerType.getMethod("setPointer", pointer);
                return v -> {
                    Object handle = make.newInstance();
                    set.invoke(handle, v.longValue() == 0 ? null : makePointer.newInstance(v.longValue()));
                    return handle;
                };
            }
            Class<?> javacpp = ancestor(type, "org.bytedeco.javacpp.Pointer");
            if (javacpp != null) {
                Field address = javacpp.getDeclaredField("address");
                address.setAccessible(true);
                Constructor<?> base = javacpp.getConstructor();
                Constructor<?> make = type == javacpp ? null : type.getConstructor(javacpp);
                Class<?> bytePointer = Class.forName("org.bytedeco.javacpp.BytePointer", false, type.getClassLoader());
                return new Converter() {
                    @Override
                    public Object convert(Number v) throws ReflectiveOperationException {
                        Object p = base.newInstance();
                        address.setLong(p, v.longValue());
                        return make == null ? p : make.newInstance(p);
                    }

                    @Override
                    public Object struct(byte[] bytes) throws ReflectiveOperationException {
                        Object copy = bytePointer.getConstructor(byte[].class).newInstance((Object) bytes);
                        return make == null ? copy : make.newInstance(copy);
                    }
                };
            }
            throw new IllegalArgumentException("cannot pass a handle or an int as " + type.getName());
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
}
