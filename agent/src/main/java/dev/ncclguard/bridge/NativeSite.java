package dev.ncclguard.bridge;

import dev.ncclguard.catalog.NativeFunction;
import java.lang.ref.WeakReference;
import java.util.Arrays;

/**
 * One wrapped native method: what it means to the tracker and how to call it again at exit.
 * Made when its class is defined, before the class exists, so it names the class and loader.
 */
final class NativeSite {
    /** The position of a function's role that is the method's return value (bindings: handle=return). */
    static final int RESULT = 1 << 16;

    final int id;
    /** The catalog function, its positions being Java argument indexes (or {@link #RESULT}). */
    final NativeFunction fn;
    final String bridge;
    /** The class's binary name (a.b.C). */
    final String owner;
    private final WeakReference<ClassLoader> loader;
    final String method;
    final String descriptor;
    final boolean isStatic;
    final int paramCount;
    /** The return type's descriptor letter: I (and Z, B, C, S), J, F, D, V, or L for any reference. */
    final char returnKind;
    /** C argument position to Java argument index, -1 where the method has none; for exit-time calls. */
    final int[] cToJava;
    /** The exit-time access to the library behind this method; made on first need. */
    volatile NativeAccess access;
    /**
     * The first receiver of an instance method, for exit-time calls. Held strongly: at exit the
     * application's own references are gone, and a binding object is one small instance per class.
     */
    volatile Object receiver;

    NativeSite(int id, NativeFunction fn, String bridge, String owner, ClassLoader loader, String method,
               String descriptor, boolean isStatic, int paramCount, char returnKind, int[] cToJava) {
        this.id = id;
        this.fn = fn;
        this.bridge = bridge;
        this.owner = owner;
        this.loader = loader == null ? null : new WeakReference<>(loader);
        this.method = method;
        this.descriptor = descriptor;
        this.isStatic = isStatic;
        this.paramCount = paramCount;
        this.returnKind = returnKind;
        this.cToJava = cToJava;
    }

    /** Whether this site's class was defined by {@code other} (null: the boot loader). */
    boolean definedBy(ClassLoader other) {
        return loader == null ? other == null : loader.get() == other;
    }

    ClassLoader loader() {
        return loader == null ? null : loader.get();
    }

    boolean handleIsResult() {
        return fn.handle() == RESULT;
    }

    /**
     * The C status of a call that returned {@code result}: an int (or long) result that is not the
     * handle is the status; a handle returned as the result succeeded when not 0; any other method
     * that returned (rather than threw) succeeded.
     */
    int status(long result) {
        if (handleIsResult()) {
            return result != 0 ? 0 : -1;
        }
        return returnKind == 'I' || returnKind == 'J' ? (int) result : 0;
    }

    /** C positions for a method named as the C function: the Java arguments, one to one. */
    static int[] identity(int paramCount) {
        int[] map = new int[paramCount];
        Arrays.setAll(map, i -> i);
        return map;
    }

    @Override
    public String toString() {
        return owner + "." + method + descriptor + " (" + fn.symbol() + ", " + bridge + ")";
    }
}
