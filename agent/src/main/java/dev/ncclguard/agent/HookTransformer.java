package dev.ncclguard.agent;

import dev.ncclguard.log.Log;
import java.lang.instrument.ClassFileTransformer;
import java.lang.instrument.Instrumentation;
import java.lang.instrument.UnmodifiableClassException;
import java.security.ProtectionDomain;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * Weaves the hooks into the classes {@link HookWeaver} knows, as they load and, for those already
 * loaded (JDK classes in premain, JNA on attach), by retransformation. Every other class costs one
 * set lookup.
 */
final class HookTransformer implements ClassFileTransformer {
    private static final Set<String> TARGETS = Set.of(
            HookWeaver.JNA_FUNCTION, HookWeaver.SHUTDOWN, HookWeaver.THREAD_GROUP);

    /** Registers the transformer and retransforms the target classes already loaded. */
    void install(Instrumentation inst) {
        inst.addTransformer(this, true);
        List<Class<?>> loaded = new ArrayList<>();
        for (Class<?> c : inst.getAllLoadedClasses()) {
            if (TARGETS.contains(c.getName().replace('.', '/')) && inst.isModifiableClass(c)) {
                loaded.add(c);
            }
        }
        for (Class<?> c : loaded) {
            try {
                inst.retransformClasses(c);
            } catch (UnmodifiableClassException | RuntimeException | LinkageError e) {
                Log.warn("cannot instrument " + c.getName() + ": " + e);
            }
        }
    }

    @Override
    public byte[] transform(ClassLoader loader, String className, Class<?> redefined,
                            ProtectionDomain domain, byte[] classfile) {
        if (className == null || !TARGETS.contains(className)) {
            return null;
        }
        try {
            if (loader != null && !hooksVisibleFrom(loader)) {
                Log.once("hooks-invisible", className.replace('/', '.') + " in " + loader
                        + " cannot see the agent's bootstrap classes (a class loader that does not delegate"
                        + " to the boot loader); its calls are not tracked");
                return null;
            }
            byte[] woven = HookWeaver.weave(className, classfile);
            if (woven == null) {
                Log.once("shape-" + className, className.replace('/', '.')
                        + " has not the shape this agent knows (JNA 5.x expected); its calls are not tracked");
            }
            return woven;
        } catch (Throwable t) {
            Log.warn("cannot instrument " + className.replace('/', '.') + ", it runs untracked: " + t);
            return null;
        }
    }

    private static boolean hooksVisibleFrom(ClassLoader loader) {
        try {
            return Class.forName(HookWeaver.HOOKS.replace('/', '.'), false, loader).getClassLoader() == null;
        } catch (ClassNotFoundException | LinkageError e) {
            return false;
        }
    }
}
