package dev.ncclguard.agent;

import jdk.internal.access.JavaLangAccess;
import jdk.internal.access.SharedSecrets;

/**
 * The two JDK internals the agent needs, called directly rather than through reflection: on JDK
 * 18+ a reflective call spins method handle classes, tens of milliseconds in premain. Compiled on
 * its own with java.base's jdk.internal.access exported to it (agent/pom.xml); {@link Agent}
 * exports that package to the agent's module before anything here runs. Both methods exist in
 * JDK 17 to 25; on a JDK without them they throw a LinkageError, which the callers handle.
 */
final class JdkInternals {
    static final String PACKAGE = "jdk.internal.access";

    private JdkInternals() {
    }

    /** Defines a class in the bootstrap class loader, without appending to its search path. */
    static Class<?> defineInBootLoader(String name, byte[] classfile) {
        return SharedSecrets.getJavaLangAccess().defineClass(null, name, classfile, null, "ncclguard");
    }

    /**
     * Registers {@code hook} in a JVM system shutdown slot: InternalError when the slot is taken,
     * IllegalStateException when the JVM is already shutting down.
     */
    static void registerShutdownHook(int slot, Runnable hook) {
        JavaLangAccess access = SharedSecrets.getJavaLangAccess();
        access.registerShutdownHook(slot, false, hook);
    }
}
