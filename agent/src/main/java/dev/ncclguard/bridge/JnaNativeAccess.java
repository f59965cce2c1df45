package dev.ncclguard.bridge;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;

/**
 * Calls functions of the application's own {@code com.sun.jna.NativeLibrary} instance, through
 * the application's JNA, so queries and cleanup reach the very library the application loaded.
 */
final class JnaNativeAccess implements NativeAccess {
    private final Object library;
    private final MethodHandle getFunction;
    private final MethodHandle invokeInt;
    private final MethodHandle newPointer;
    private final String name;

    JnaNativeAccess(Object library) throws ReflectiveOperationException {
        this.library = library;
        Class<?> libraryClass = library.getClass();
        ClassLoader loader = libraryClass.getClassLoader();
        Class<?> function = Class.forName("com.sun.jna.Function", false, loader);
        Class<?> pointer = Class.forName("com.sun.jna.Pointer", false, loader);
        MethodHandles.Lookup lookup = MethodHandles.publicLookup();
        this.getFunction = lookup.findVirtual(libraryClass, "getFunction",
                MethodType.methodType(function, String.class));
        this.invokeInt = lookup.findVirtual(function, "invokeInt",
                MethodType.methodType(int.class, Object[].class));
        this.newPointer = lookup.findConstructor(pointer, MethodType.methodType(void.class, long.class));
        String file;
        try {
            Object f = lookup.findVirtual(libraryClass, "getFile", MethodType.methodType(java.io.File.class))
                    .invoke(library);
            file = f == null ? String.valueOf(library) : f.toString();
        } catch (Throwable t) {
            file = String.valueOf(library);
        }
        this.name = file;
    }

    @Override
    public String library() {
        return name;
    }

    @Override
    public int call(String symbol, Object... args) {
        Object[] jnaArgs = new Object[args.length];
        try {
            for (int i = 0; i < args.length; i++) {
                Object a = args[i];
                jnaArgs[i] = a instanceof Long ? newPointer.invoke((long) (Long) a) : a;
            }
            Object fn = getFunction.invoke(library, symbol);
            boolean outer = JnaArgs.agentCallStarts();
            try {
                return (int) invokeInt.invoke(fn, jnaArgs);
            } finally {
                if (outer) {
                    JnaArgs.agentCallEnds();
                }
            }
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("cannot call " + symbol + " in " + name + ": " + t, t);
        }
    }

    @Override
    public String toString() {
        return name;
    }
}
