package dev.ncclguard.agent;

import java.lang.module.ModuleDescriptor;
import java.net.URI;
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

    /** Whether the boot loader still takes definitions: only while the agent installs (closeBootLoader). */
    private static volatile boolean bootLoaderOpen = true;

    private JdkInternals() {
    }

    /**
     * Defines a class in the bootstrap class loader, without appending to its search path; only
     * until {@link #closeBootLoader}, so that nothing of the agent can define one after its install.
     */
    static Class<?> defineInBootLoader(String name, byte[] classfile) {
        if (!bootLoaderOpen) {
            throw new IllegalStateException("the boot loader takes no more classes from ncclguard");
        }
        return SharedSecrets.getJavaLangAccess().defineClass(null, name, classfile, null, "ncclguard");
    }

    /** Defines a named module in the bootstrap class loader, in no layer: its packages' classes land in it. */
    static Module defineBootModule(ModuleDescriptor descriptor, URI location) {
        if (!bootLoaderOpen) {
            throw new IllegalStateException("the boot loader takes no more modules from ncclguard");
        }
        return SharedSecrets.getJavaLangAccess().defineModule(null, descriptor, location);
    }

    /** Ends {@link #defineInBootLoader} and {@link #defineBootModule} for the life of the JVM. */
    static void closeBootLoader() {
        bootLoaderOpen = false;
    }

    /** {@code from} reads {@code to}, as Module.addReads would if {@code from}'s own code called it. */
    static void addReads(Module from, Module to) {
        SharedSecrets.getJavaLangAccess().addReads(from, to);
    }

    /** {@code from} reads every unnamed module: the application's JNA and SLF4J, in whatever loader. */
    static void addReadsAllUnnamed(Module from) {
        SharedSecrets.getJavaLangAccess().addReadsAllUnnamed(from);
    }

    /** {@code from} exports {@code pkg} to every module. */
    static void addExports(Module from, String pkg) {
        SharedSecrets.getJavaLangAccess().addExports(from, pkg);
    }

    /** {@code from} exports {@code pkg} to {@code to} alone. */
    static void addExports(Module from, String pkg, Module to) {
        SharedSecrets.getJavaLangAccess().addExports(from, pkg, to);
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
