package dev.ncclguard.bridge.jna;

import dev.ncclguard.bridge.OwnCalls;
import dev.ncclguard.track.NativeAccess;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;

/**
 * Calls functions of the application's own {@code com.sun.jna.NativeLibrary} instance, through
 * the application's JNA, so queries and cleanup reach the very library the application loaded.
 * One is made at the first tracked call into each library, but used only at exit and only when
 * something leaked: its method handles are looked up at its first call, so that a program's first
 * NCCL calls spin no method handle classes for it.
 */
final class JnaNativeAccess implements NativeAccess {
    private final Object library;
    private final Class<?> function;
    private final Class<?> pointer;
    /** getFunction, invokeInt, new Pointer(long): set together, at the first call. */
    private volatile MethodHandle[] handles;
    private volatile String name;

    JnaNativeAccess(Object library) throws ReflectiveOperationException {
        this.library = library;
        ClassLoader loader = library.getClass().getClassLoader();
        this.function = Class.forName("com.sun.jna.Function", false, loader);
        this.pointer = Class.forName("com.sun.jna.Pointer", false, loader);
    }

    private MethodHandle[] handles() throws ReflectiveOperationException {
        MethodHandle[] h = handles;
        if (h == null) {
            MethodHandles.Lookup lookup = MethodHandles.publicLookup();
            h = new MethodHandle[] {
                lookup.findVirtual(library.getClass(), "getFunction", MethodType.methodType(function, String.class)),
                lookup.findVirtual(function, "invokeInt", MethodType.methodType(int.class, Object[].class)),
                lookup.findConstructor(pointer, MethodType.methodType(void.class, long.class)),
            };
            handles = h;
        }
        return h;
    }

    @Override
    public String library() {
        String n = name;
        if (n == null) {
            try {
                Object f = library.getClass().getMethod("getFile").invoke(library);
                n = f == null ? String.valueOf(library) : f.toString();
            } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
                n = String.valueOf(library);
            }
            name = n;
        }
        return n;
    }

    @Override
    public int call(String symbol, Object... args) {
        Object[] jnaArgs = new Object[args.length];
        try {
            MethodHandle[] h = handles();
            for (int i = 0; i < args.length; i++) {
                Object a = args[i];
                jnaArgs[i] = a instanceof Long ? h[2].invoke((long) (Long) a) : a;
            }
            Object fn = h[0].invoke(library, symbol);
            boolean outer = OwnCalls.starts();
            try {
                return (int) h[1].invoke(fn, jnaArgs);
            } finally {
                if (outer) {
                    OwnCalls.ends();
                }
            }
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("cannot call " + symbol + " in " + library() + ": " + t, t);
        }
    }

    @Override
    public String toString() {
        return library();
    }
}
