package dev.ncclguard.weave;

import dev.ncclguard.bootstrap.Hooks;
import dev.ncclguard.bootstrap.state.HookState;
import dev.ncclguard.log.Log;
import java.lang.instrument.ClassFileTransformer;
import java.lang.instrument.Instrumentation;
import java.lang.instrument.UnmodifiableClassException;
import java.security.ProtectionDomain;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Weaves the hooks into the classes {@link HookWeaver} knows, as they load and, for those already
 * loaded (JDK classes in premain, JNA on attach), by retransformation. Every other class costs one
 * set lookup.
 */
public final class HookTransformer implements ClassFileTransformer {
    public static final String NOT_LOADED = "not loaded yet, instrumented when it loads";

    /** Internal names of the classes to weave. */
    private final Set<String> targets;
    /** Why the last transformation of a class was not done, for {@link #install}'s answer. */
    private final Map<String, String> failures = new ConcurrentHashMap<>();
    /** Started once, as JNA's Function is woven at its load: what its first tracked calls need can be loaded ahead then. */
    private final Thread atJnaFunction;
    private volatile boolean jnaSeen;

    /**
     * @param ffmFirstUse   also weave the static methods where FFM use starts (Java 22+)
     * @param atJnaFunction a thread not started yet, started when JNA's Function is woven as it loads;
     *                      null for none
     */
    public HookTransformer(boolean ffmFirstUse, Thread atJnaFunction) {
        this.atJnaFunction = atJnaFunction;
        targets = ffmFirstUse
                ? Set.of(HookWeaver.JNA_FUNCTION, HookWeaver.SHUTDOWN, HookWeaver.THREAD_GROUP,
                        HookWeaver.APP_SHUTDOWN_HOOKS, HookWeaver.SYMBOL_LOOKUP, HookWeaver.LINKER)
                : Set.of(HookWeaver.JNA_FUNCTION, HookWeaver.SHUTDOWN, HookWeaver.THREAD_GROUP,
                        HookWeaver.APP_SHUTDOWN_HOOKS);
    }

    /**
     * Registers the transformer and retransforms the target classes already loaded. Returns, per
     * target class, what became of it: a class loaded several times (one per class loader) has one
     * answer per copy.
     */
    public Map<String, List<String>> install(Instrumentation inst) {
        inst.addTransformer(this, true);
        Map<String, List<String>> outcome = new TreeMap<>();
        for (String name : targets) {
            outcome.put(name.replace('/', '.'), new ArrayList<>());
        }
        List<Class<?>> loaded = new ArrayList<>();
        for (Class<?> c : inst.getAllLoadedClasses()) {
            if (outcome.containsKey(c.getName())) { // binary names: no string built per loaded class
                if (inst.isModifiableClass(c)) {
                    loaded.add(c);
                } else {
                    outcome.get(c.getName()).add("loaded and not modifiable");
                }
            }
        }
        // one retransformation for all (in premain: Shutdown and ThreadGroup), one VM operation;
        // one by one only if that fails, so that one refused class leaves the others woven
        boolean together = false;
        if (loaded.size() > 1) {
            for (Class<?> c : loaded) {
                failures.remove(c.getName().replace('.', '/'));
            }
            try {
                inst.retransformClasses(loaded.toArray(new Class<?>[0]));
                together = true;
            } catch (UnmodifiableClassException | RuntimeException | LinkageError e) {
                // retried one by one below
            }
        }
        for (Class<?> c : loaded) {
            String internalName = c.getName().replace('.', '/');
            if (!together) {
                failures.remove(internalName);
                try {
                    inst.retransformClasses(c);
                } catch (UnmodifiableClassException | RuntimeException | LinkageError e) {
                    Log.warn("cannot instrument " + c.getName() + ": " + e);
                    outcome.get(c.getName()).add("not instrumented: " + e);
                    continue;
                }
            }
            String failed = failures.remove(internalName);
            outcome.get(c.getName()).add(failed == null ? "already loaded, retransformed" : "not instrumented: " + failed);
        }
        for (List<String> states : outcome.values()) {
            if (states.isEmpty()) {
                states.add(NOT_LOADED);
            }
        }
        return outcome;
    }

    @Override
    public byte[] transform(Module module, ClassLoader loader, String className, Class<?> redefined,
                            ProtectionDomain domain, byte[] classfile) {
        byte[] woven = transform(loader, className, redefined, domain, classfile);
        if (woven != null) {
            HookReads.readHooks(module);
        }
        return woven;
    }

    @Override
    public byte[] transform(ClassLoader loader, String className, Class<?> redefined,
                            ProtectionDomain domain, byte[] classfile) {
        if (className == null || !targets.contains(className)) {
            return null;
        }
        try {
            if (loader != null && !hooksVisibleFrom(loader)) {
                Log.once("hooks-invisible", className.replace('/', '.') + " in " + loader
                        + " cannot see the agent's bootstrap classes (a class loader that does not delegate"
                        + " to the boot loader); its calls are not tracked");
                failures.put(className, "its class loader cannot see the agent's bootstrap classes");
                return null;
            }
            byte[] woven = HookWeaver.weave(className, classfile, redefined);
            if (woven != null && redefined == null && className.equals(HookWeaver.JNA_FUNCTION) && !jnaSeen) {
                jnaSeen = true;
                startQuietly(atJnaFunction);
            }
            if (woven == null) {
                Log.once("shape-" + className, className.replace('/', '.')
                        + " has not the shape this agent knows (JNA 5.x expected); its calls are not tracked");
                failures.put(className, "not the shape this agent knows");
                installFfmNowIfItsTrigger(className);
            }
            return woven;
        } catch (Throwable t) {
            Log.warn("cannot instrument " + className.replace('/', '.') + ", it runs untracked: " + t);
            failures.put(className, String.valueOf(t));
            installFfmNowIfItsTrigger(className);
            return null;
        }
    }

    /**
     * A class where FFM use starts could not get its first-use hook: the FFM bridge is installed
     * now rather than never, on a thread of its own (not inside this class's loading).
     */
    private static void installFfmNowIfItsTrigger(String className) {
        if ((className.equals(HookWeaver.SYMBOL_LOOKUP) || className.equals(HookWeaver.LINKER))
                && HookState.ffmInstall != null) {
            Thread t = new Thread(Hooks::ffmFirstUse, "ncclguard-ffm-install");
            t.setDaemon(true);
            t.start();
        }
    }

    private static void startQuietly(Thread thread) {
        try {
            if (thread != null) {
                thread.start();
            }
        } catch (RuntimeException | Error e) {
            // nothing lost: what it would have loaded loads where it is needed
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
