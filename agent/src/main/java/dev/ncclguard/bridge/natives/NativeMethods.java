package dev.ncclguard.bridge.natives;

import dev.ncclguard.bootstrap.state.HookState;
import dev.ncclguard.bridge.WrappedNatives;
import dev.ncclguard.config.Bindings;
import dev.ncclguard.log.Log;
import dev.ncclguard.track.Tracker;
import java.lang.instrument.Instrumentation;

/**
 * Sets up the native-method bridges (JNA direct mapping, JNI, JavaCPP, bindings file): a native
 * method prefix of ours, the transformer that wraps native methods under it, JNA's
 * {@code jna.profiler.prefix} so that JNA's direct mapping still finds the C symbols, and a
 * self-check that a wrapped native method still binds and runs.
 */
public final class NativeMethods {
    public static final String PREFIX = "$$ncclguard$$";
    /** JNA strips this prefix from a direct-mapped method's name when it looks the symbol up. */
    static final String JNA_PREFIX_PROPERTY = "jna.profiler.prefix";

    /** The self-check's JDK methods, tried in turn until one is not loaded yet: class, method, descriptor, input, expected. */
    private static final Object[][] PROBES = {
        {"java/util/zip/Adler32", "update", "(II)I", 0x0002_0002L},
        {"java/util/zip/CRC32", "update", "(II)I", 0xA505_DF1BL},
    };

    private NativeMethods() {
    }

    /**
     * Installs the bridge and returns it, or returns null after one log line saying why native
     * methods cannot be wrapped in this JVM and what to do (the JNA interface bridge still works).
     */
    public static NativeBridge install(Instrumentation inst, Tracker tracker, Bindings bindings, boolean premain) {
        if (!inst.isNativeMethodPrefixSupported()) {
            Log.warn("JNA direct-mapped, JNI and JavaCPP calls are NOT tracked: this JVM cannot set a native"
                    + " method prefix (the agent jar's manifest asks for Can-Set-Native-Method-Prefix); run on a"
                    + " HotSpot JVM (OpenJDK, Temurin) to track them");
            return null;
        }
        String prefix = PREFIX;
        boolean wrapJnaDirect = true;
        String applications = System.getProperty(JNA_PREFIX_PROPERTY);
        if (applications == null) {
            System.setProperty(JNA_PREFIX_PROPERTY, PREFIX);
        } else if (isPrefix(applications)) {
            // JNA strips only one prefix: share the one the application chose
            prefix = applications;
            Log.info("jna.profiler.prefix is already set to '" + applications + "'; ncclguard wraps native methods"
                    + " under that prefix so that JNA's direct mapping keeps finding their symbols");
        } else {
            wrapJnaDirect = false;
            Log.warn("jna.profiler.prefix is set to '" + applications + "', which JNA cannot strip from a method"
                    + " name: JNA direct-mapped classes are NOT tracked (unset it to track them)");
        }
        NativeBridge bridge = new NativeBridge(tracker, prefix);
        WrappedNatives.prefix(prefix);
        NativeMethodTransformer transformer = new NativeMethodTransformer(bridge, bindings, prefix, wrapJnaDirect);
        bridge.transformer(transformer);
        inst.addTransformer(transformer, false);
        inst.setNativeMethodPrefix(transformer, prefix);
        HookState.natives = bridge;
        if (premain) {
            // checked before the first class is wrapped rather than now: most applications have
            // no such class, and the check loads and wraps a JDK class in premain
            transformer.checkBeforeFirstWrap(new Check(inst, bridge, transformer));
            return bridge;
        }
        if (!new Check(inst, bridge, transformer).passes()) {
            return null;
        }
        return bridge;
    }

    /** The install check, and what its failure undoes. */
    static final class Check {
        private final Instrumentation inst;
        private final NativeBridge bridge;
        private final NativeMethodTransformer transformer;

        Check(Instrumentation inst, NativeBridge bridge, NativeMethodTransformer transformer) {
            this.inst = inst;
            this.bridge = bridge;
            this.transformer = transformer;
        }

        /** Runs {@link #selfCheck}; on a failure takes the bridge out, says why and returns false. */
        boolean passes() {
            String failure = selfCheck(bridge, transformer);
            if (failure == null) {
                return true;
            }
            HookState.natives = null;
            inst.removeTransformer(transformer);
            Log.warn("JNA direct-mapped, JNI and JavaCPP calls are NOT tracked: a wrapped native method failed"
                    + " the install check (" + failure + "); if another agent also wraps native methods, start"
                    + " ncclguard's -javaagent first, else report this with `java -version`");
            return false;
        }
    }

    /** A prefix JNA can strip and the JVM accepts in a method name. */
    private static boolean isPrefix(String s) {
        if (s.isEmpty()) {
            return false;
        }
        for (int i = 0; i < s.length(); i++) {
            if (!Character.isJavaIdentifierPart(s.charAt(i))) {
                return false;
            }
        }
        return true;
    }

    /**
     * Wraps a native method of a JDK class that is not loaded yet, loads the class, calls the
     * method and checks its result and that the wrapper went through the hooks. Returns null when
     * all is well (or no such class is left unloaded, as after a late attach), else the reason.
     */
    static String selfCheck(NativeBridge bridge, NativeMethodTransformer transformer) {
        int site = bridge.addProbe();
        for (Object[] probe : PROBES) {
            String internal = (String) probe[0];
            transformer.armProbe(internal, (String) probe[1], (String) probe[2], site);
            Class<?> type;
            try {
                type = Class.forName(internal.replace('/', '.'));
            } catch (ClassNotFoundException | LinkageError e) {
                continue;
            }
            if (!transformer.probeWrapped()) {
                continue; // loaded before the agent: try the next one
            }
            long before = bridge.probeCalls();
            try {
                Object checksum = type.getConstructor().newInstance();
                type.getMethod("update", int.class).invoke(checksum, 1);
                long value = (long) type.getMethod("getValue").invoke(checksum);
                if (value != (long) probe[3]) {
                    return internal + " computed 0x" + Long.toHexString(value) + " instead of 0x"
                            + Long.toHexString((long) probe[3]);
                }
            } catch (java.lang.reflect.InvocationTargetException e) {
                return "calling a wrapped " + internal.replace('/', '.') + " failed: " + e.getCause();
            } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
                return "calling a wrapped " + internal.replace('/', '.') + " failed: " + e;
            }
            if (bridge.probeCalls() == before) {
                return "the wrapper of " + internal.replace('/', '.') + " did not reach the agent";
            }
            return null;
        }
        return null;
    }
}
