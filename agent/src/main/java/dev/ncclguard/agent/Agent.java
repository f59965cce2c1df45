package dev.ncclguard.agent;

import java.io.IOException;
import java.io.InputStream;
import java.lang.instrument.Instrumentation;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.lang.reflect.Method;
import java.security.ProtectionDomain;
import java.util.Set;

/**
 * The agent's entry points: -javaagent (premain) and attach (agentmain). This class only defines
 * the bootstrap package in the bootstrap class loader, then hands over to {@link Installer} by name: it
 * must not link any class of {@code dev.ncclguard.bootstrap} itself, or the system class loader
 * would load a second copy of them before the bootstrap one exists.
 */
public final class Agent {
    /** Interfaces first: a class is defined after the types it implements. */
    private static final List<String> BOOTSTRAP_CLASSES = List.of(
            "dev.ncclguard.bootstrap.JnaSink", "dev.ncclguard.bootstrap.JnaHandle", "dev.ncclguard.bootstrap.NativeSink",
            "dev.ncclguard.bootstrap.FfmSink",
            "dev.ncclguard.bootstrap.Hooks", "dev.ncclguard.bootstrap.LiveView", "dev.ncclguard.bootstrap.Live");

    private Agent() {
    }

    public static void premain(String args, Instrumentation inst) {
        start(args, inst, true);
    }

    public static void agentmain(String args, Instrumentation inst) {
        // the attach and dump commands' requests, option checks and option updates are answered
        // before the JVM changes in any way; only a first attach goes on to install
        dev.ncclguard.live.AttachEntry.agentmain(args, inst, options -> start(options, inst, false));
    }

    private static void start(String args, Instrumentation inst, boolean premain) {
        try {
            appendBootstrap(inst);
            Class.forName("dev.ncclguard.agent.Installer")
                    .getMethod("install", String.class, Instrumentation.class, boolean.class)
                    .invoke(null, args, inst, premain);
        } catch (java.lang.reflect.InvocationTargetException e) {
            Throwable cause = e.getCause();
            if (cause instanceof RuntimeException) {
                throw (RuntimeException) cause;
            }
            System.err.println("ncclguard: not installed: " + cause);
        } catch (Throwable t) {
            System.err.println("ncclguard: not installed: " + t);
        }
    }

    /**
     * Defines the bootstrap package's classes in the bootstrap class loader. They are injected
     * rather than appended to the bootstrap class path: appending disables class data sharing for
     * the application's classes and makes the JVM print a warning on every start.
     */
    private static void appendBootstrap(Instrumentation inst) throws IOException {
        if (isOnBootstrap()) {
            return; // an earlier attach already put it there
        }
        Map<String, byte[]> classes = new LinkedHashMap<>();
        ClassLoader own = Agent.class.getClassLoader();
        for (String name : BOOTSTRAP_CLASSES) {
            try (InputStream in = own.getResourceAsStream(name.replace('.', '/') + ".class")) {
                if (in == null) {
                    throw new IOException("agent jar lacks " + name);
                }
                classes.put(name, in.readAllBytes());
            }
        }
        // jdk.internal.misc.Unsafe, opened to the agent alone through Instrumentation: the
        // sun.misc one that libraries use for this warns on JDK 24+
        Module base = Object.class.getModule();
        Module agent = Agent.class.getModule();
        inst.redefineModule(base, Set.of(), Map.of("jdk.internal.misc", Set.of(agent)),
                Map.of(), Set.of(), Map.of());
        try {
            Class<?> unsafeClass = Class.forName("jdk.internal.misc.Unsafe");
            Object unsafe = unsafeClass.getMethod("getUnsafe").invoke(null);
            Method define = unsafeClass.getMethod("defineClass", String.class, byte[].class, int.class,
                    int.class, ClassLoader.class, ProtectionDomain.class);
            for (Map.Entry<String, byte[]> c : classes.entrySet()) {
                define.invoke(unsafe, c.getKey(), c.getValue(), 0, c.getValue().length, null, null);
            }
        } catch (ReflectiveOperationException e) {
            throw new IOException("cannot define the agent's bootstrap classes: " + e, e);
        }
    }

    private static boolean isOnBootstrap() {
        try {
            return Class.forName("dev.ncclguard.bootstrap.Hooks", false, null) != null;
        } catch (ClassNotFoundException e) {
            return false;
        }
    }
}
