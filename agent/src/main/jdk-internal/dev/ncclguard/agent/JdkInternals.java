package dev.ncclguard.agent;

import jdk.internal.access.JavaLangAccess;
import jdk.internal.access.SharedSecrets;

/**
 * The JDK internals the agent needs, called directly rather than through reflection: on JDK
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

    /**
     * Loads a native library for {@code from}'s class loader as System.load does, without its
     * restricted-method check (JDK 24+ warns when the agent's unnamed module calls System.load):
     * the JDK's NativeLibraries of that loader, found by name since JDK 17 lacks nativeLibrariesFor.
     * Needs java.base's jdk.internal.loader exported to the agent.
     */
    static void loadLibrary(Class<?> from, String path) throws ReflectiveOperationException {
        JavaLangAccess access = SharedSecrets.getJavaLangAccess();
        Object libraries = JavaLangAccess.class.getMethod("nativeLibrariesFor", ClassLoader.class)
                .invoke(access, from.getClassLoader());
        Object library = libraries.getClass().getMethod("loadLibrary", Class.class, java.io.File.class)
                .invoke(libraries, from, new java.io.File(path));
        if (library == null) {
            throw new UnsatisfiedLinkError("Can't load library: " + path);
        }
    }
}
