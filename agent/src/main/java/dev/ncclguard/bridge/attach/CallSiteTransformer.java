package dev.ncclguard.bridge.attach;

import dev.ncclguard.bridge.natives.ClassScan;
import dev.ncclguard.bridge.natives.NativeSite;
import dev.ncclguard.log.Log;
import dev.ncclguard.weave.CallSiteRewriter;
import dev.ncclguard.weave.Slots;
import java.lang.instrument.ClassFileTransformer;
import java.security.ProtectionDomain;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Rewrites, after an attach, the calls of native methods loaded before it in every class that
 * makes one ({@link CallSiteRewriter}). Registered retransformable: it rewrites loaded callers,
 * and callers loaded later.
 */
final class CallSiteTransformer implements ClassFileTransformer {
    /** "owner.name(desc)" (owner internal) to the site of that native method. */
    private final Map<String, Integer> sites = new HashMap<>();
    private final Map<Integer, Slots> slots = new HashMap<>();
    private final ClassScan scan;
    /** Call sites rewritten, per internal class name; read by the attach command's answer. */
    final Map<String, Integer> rewritten = new ConcurrentHashMap<>();

    CallSiteTransformer(Map<String, NativeSite> sites, ClassScan scan) {
        for (Map.Entry<String, NativeSite> e : sites.entrySet()) {
            this.sites.put(e.getKey(), e.getValue().id());
            this.slots.put(e.getValue().id(), e.getValue().slots());
        }
        this.scan = scan;
    }

    /** Whether {@code classfile} names one of the methods (a cheap filter before parsing). */
    boolean mayCall(byte[] classfile) {
        return scan.namesAny(classfile);
    }

    @Override
    public byte[] transform(Module module, ClassLoader loader, String className, Class<?> redefined,
                            ProtectionDomain domain, byte[] classfile) {
        byte[] rewritten = transform(loader, className, redefined, domain, classfile);
        if (rewritten != null) {
            dev.ncclguard.weave.HookReads.readHooks(module);
        }
        return rewritten;
    }

    @Override
    public byte[] transform(ClassLoader loader, String className, Class<?> redefined,
                            ProtectionDomain domain, byte[] classfile) {
        if (className == null || classfile == null || loader == null || !mayCall(classfile)) {
            return null;
        }
        try {
            return CallSiteRewriter.rewrite(classfile, sites, slots::get,
                    count -> rewritten.merge(className, count, Integer::sum));
        } catch (Throwable t) {
            Log.warn("cannot rewrite the NCCL/CUDA calls in " + className.replace('/', '.')
                    + ", they run untracked: " + t);
            return null;
        }
    }
}
