package dev.ncclguard.bridge.ffm;

import dev.ncclguard.bootstrap.state.HookState;
import dev.ncclguard.log.Log;
import dev.ncclguard.track.Tracker;
import dev.ncclguard.weave.FfmWeaver;
import java.lang.instrument.ClassFileTransformer;
import java.lang.instrument.Instrumentation;
import java.lang.instrument.UnmodifiableClassException;
import java.security.ProtectionDomain;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * Installs the FFM bridge (Java 22+): plugs it into the hooks and has {@link FfmWeaver} weave its
 * two hooks into the JDK's native library lookups and downcall handle factory, as they load or by
 * retransformation.
 */
public final class FfmTransformer implements ClassFileTransformer {
    private static final Set<String> TARGETS = Set.of(FfmWeaver.NATIVE_LIBRARY_IMPL, FfmWeaver.RAW_NATIVE_LIBRARY_IMPL,
            FfmWeaver.ABSTRACT_LINKER);

    private FfmTransformer() {
    }

    /** On Java 22 and later: plugs the FFM bridge in and weaves its hooks. Does nothing before. */
    public static void install(Instrumentation inst, Tracker tracker) {
        if (Runtime.version().feature() < 22) {
            return;
        }
        HookState.ffm = new FfmBridge(tracker);
        FfmTransformer transformer = new FfmTransformer();
        inst.addTransformer(transformer, true);
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
                Log.warn("FFM downcalls are NOT tracked: cannot instrument " + c.getName() + ": " + e);
            }
        }
    }

    @Override
    public byte[] transform(ClassLoader loader, String className, Class<?> redefined,
                            ProtectionDomain domain, byte[] classfile) {
        if (loader != null || className == null || !TARGETS.contains(className)) {
            return null;
        }
        try {
            byte[] woven = FfmWeaver.weave(className, classfile);
            if (woven == null) {
                Log.once("ffm-shape", className.replace('/', '.') + " has not the shape this agent knows;"
                        + " FFM downcalls are NOT tracked");
            }
            return woven;
        } catch (Throwable t) {
            Log.warn("cannot instrument " + className.replace('/', '.') + ", FFM downcalls run untracked: " + t);
            return null;
        }
    }
}
