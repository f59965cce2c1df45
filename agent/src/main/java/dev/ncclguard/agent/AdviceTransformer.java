package dev.ncclguard.agent;

import dev.ncclguard.log.Log;
import java.lang.instrument.ClassFileTransformer;
import java.lang.instrument.Instrumentation;
import java.lang.instrument.UnmodifiableClassException;
import java.security.ProtectionDomain;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import net.bytebuddy.ByteBuddy;
import net.bytebuddy.asm.AsmVisitorWrapper;
import net.bytebuddy.description.type.TypeDescription;
import net.bytebuddy.dynamic.ClassFileLocator;
import net.bytebuddy.dynamic.scaffold.TypeValidation;
import net.bytebuddy.implementation.Implementation;
import net.bytebuddy.pool.TypePool;

/**
 * Weaves advice into a few named classes, as they load and once more for those already loaded.
 * A plain ClassFileTransformer rather than Byte Buddy's AgentBuilder: AgentBuilder sets up class
 * injection through sun.misc.Unsafe when created, which JDK 24+ warns about on every start, and
 * this agent needs no injection. Only the named classes are ever parsed; every other class costs
 * one string comparison per name.
 */
final class AdviceTransformer implements ClassFileTransformer {
    /** Internal class name (a/b/C) to the advice woven into it. */
    private final Map<String, AsmVisitorWrapper> advice;
    /** Why the last transformation of a class failed, for {@link #install}'s answer. */
    private final Map<String, String> failures = new ConcurrentHashMap<>();

    AdviceTransformer(Map<String, AsmVisitorWrapper> advice) {
        this.advice = Map.copyOf(advice);
    }

    /**
     * Registers the transformer and retransforms the named classes that are already loaded.
     * Returns, per named class, what became of it: a class loaded several times (one per class
     * loader) has one answer per copy.
     */
    Map<String, List<String>> install(Instrumentation inst) {
        inst.addTransformer(this, true);
        Map<String, List<String>> outcome = new TreeMap<>();
        for (String name : advice.keySet()) {
            outcome.put(name.replace('/', '.'), new ArrayList<>());
        }
        List<Class<?>> loaded = new ArrayList<>();
        for (Class<?> c : inst.getAllLoadedClasses()) {
            if (advice.containsKey(c.getName().replace('.', '/'))) {
                if (inst.isModifiableClass(c)) {
                    loaded.add(c);
                } else {
                    outcome.get(c.getName()).add("loaded and not modifiable");
                }
            }
        }
        for (Class<?> c : loaded) {
            String internalName = c.getName().replace('.', '/');
            failures.remove(internalName);
            try {
                inst.retransformClasses(c);
                String failed = failures.remove(internalName);
                outcome.get(c.getName()).add(failed == null ? "already loaded, retransformed" : "not instrumented: " + failed);
            } catch (UnmodifiableClassException | RuntimeException | LinkageError e) {
                Log.warn("cannot instrument " + c.getName() + ": " + e);
                outcome.get(c.getName()).add("not instrumented: " + e);
            }
        }
        for (List<String> states : outcome.values()) {
            if (states.isEmpty()) {
                states.add("not loaded yet, instrumented when it loads");
            }
        }
        return outcome;
    }

    @Override
    public byte[] transform(ClassLoader loader, String className, Class<?> redefined,
                            ProtectionDomain domain, byte[] classfile) {
        AsmVisitorWrapper wrapper = className == null ? null : advice.get(className);
        if (wrapper == null) {
            return null;
        }
        try {
            String name = className.replace('/', '.');
            ClassFileLocator locator = new ClassFileLocator.Compound(
                    ClassFileLocator.Simple.of(name, classfile),
                    loader == null ? ClassFileLocator.ForClassLoader.ofBootLoader()
                            : ClassFileLocator.ForClassLoader.of(loader));
            TypeDescription type = TypePool.Default.WithLazyResolution.of(locator).describe(name).resolve();
            return new ByteBuddy()
                    .with(TypeValidation.DISABLED)
                    .with(Implementation.Context.Disabled.Factory.INSTANCE)
                    .redefine(type, locator)
                    .visit(wrapper)
                    .make()
                    .getBytes();
        } catch (Throwable t) {
            Log.warn("cannot instrument " + className + ", it runs untracked: " + t);
            failures.put(className, String.valueOf(t));
            return null;
        }
    }
}
