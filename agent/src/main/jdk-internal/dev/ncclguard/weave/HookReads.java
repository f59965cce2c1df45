package dev.ncclguard.weave;

import jdk.internal.access.SharedSecrets;

/**
 * Makes a named module whose classes the agent weaves read the boot hooks' module. Unnamed modules
 * read every module, and the JVM makes a named module it sees transformed read every unnamed one;
 * but the hooks live in a named module (agent.Agent), so a woven class of an explicit module (JNA
 * on the module path, an application module with native methods) would fail to link its calls
 * without this. Compiled with java.base's jdk.internal.access exported to it, like JdkInternals.
 */
public final class HookReads {
    /** The hooks' module; null while the hooks are not in a named module (in-process tests). */
    private static volatile Module hooks;

    private HookReads() {
    }

    /** Set by the agent once the hooks' module exists. */
    public static void hooksIn(Module module) {
        hooks = module.isNamed() ? module : null;
    }

    /** Before a class of {@code module} is given code that calls the hooks. */
    public static void readHooks(Module module) {
        Module h = hooks;
        if (h != null && module != null && module.isNamed() && !module.canRead(h)) {
            SharedSecrets.getJavaLangAccess().addReads(module, h);
        }
    }
}
