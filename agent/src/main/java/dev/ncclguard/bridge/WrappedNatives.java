package dev.ncclguard.bridge;

import java.util.LinkedHashSet;
import java.util.Set;

/**
 * The JNI entry points of the native methods the Java bridges wrap (JNI, JavaCPP, the bindings
 * file), by their JNI short names, for the native part: their C code links libnccl.so.2 and so
 * binds to the interposer too, which leaves out the calls they make themselves (each call is
 * tracked once, by the Java bridge, with its object identity and Java stack). The natives bridge
 * adds a name as it wraps the method, before the class can run; the interposer listens.
 */
public final class WrappedNatives {
    /** Told every name so far, each time one is added. */
    public interface Listener {
        void wrapped(String[] jniNames);
    }

    private static final Set<String> NAMES = new LinkedHashSet<>();
    private static Listener listener;
    private static volatile boolean any;
    private static volatile String prefix;

    private WrappedNatives() {
    }

    /** A native method of class {@code binaryName} (a.b.C) named {@code method} is wrapped. */
    public static void add(String binaryName, String method) {
        String name = jniShortName(binaryName, method);
        String[] all;
        Listener l;
        synchronized (NAMES) {
            if (!NAMES.add(name)) {
                return;
            }
            any = true;
            all = NAMES.toArray(new String[0]);
            l = listener;
        }
        if (l != null) {
            l.wrapped(all);
        }
    }

    /**
     * Whether native method {@code method} of class {@code binaryName} is one a Java bridge tracks:
     * wrapped, or (after an attach) reached at its call sites under its own name.
     */
    public static boolean has(String binaryName, String method) {
        String name = jniShortName(binaryName, method);
        synchronized (NAMES) {
            return NAMES.contains(name);
        }
    }

    /** Listens from now on, and hears the names so far at once. */
    public static void listen(Listener l) {
        String[] all;
        synchronized (NAMES) {
            listener = l;
            all = NAMES.toArray(new String[0]);
        }
        if (all.length > 0) {
            l.wrapped(all);
        }
    }

    /** The native method prefix the wrapped natives are renamed under (their Java frames show it). */
    public static void prefix(String nativePrefix) {
        prefix = nativePrefix;
    }

    public static String prefix() {
        return prefix;
    }

    /** Whether any native method was wrapped: until then no native call can be a wrapped one's. */
    public static boolean any() {
        return any;
    }

    /** {@code Java_} + the mangled class + {@code _} + the mangled method, as the JNI specification mangles them. */
    static String jniShortName(String binaryName, String method) {
        StringBuilder b = new StringBuilder(binaryName.length() + method.length() + 16).append("Java_");
        mangle(b, binaryName.replace('.', '/'));
        b.append('_');
        mangle(b, method);
        return b.toString();
    }

    private static void mangle(StringBuilder b, String s) {
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '/') {
                b.append('_');
            } else if (c == '_') {
                b.append("_1");
            } else if (c == ';') {
                b.append("_2");
            } else if (c == '[') {
                b.append("_3");
            } else if (c < 128 && Character.isLetterOrDigit(c)) {
                b.append(c);
            } else {
                b.append("_0").append(String.format("%04x", (int) c));
            }
        }
    }
}
