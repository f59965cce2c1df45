package dev.ncclguard.bridge.attach;

import dev.ncclguard.bridge.natives.ClassScan;
import dev.ncclguard.bridge.natives.NativeBridge;
import dev.ncclguard.bridge.natives.NativeMethodTransformer;
import dev.ncclguard.bridge.natives.NativeSite;
import dev.ncclguard.log.Log;
import java.io.IOException;
import java.io.InputStream;
import java.lang.instrument.Instrumentation;
import java.lang.instrument.UnmodifiableClassException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import net.bytebuddy.jar.asm.Type;

/**
 * After an attach: the NCCL and CUDA native methods (JNA direct, JNI, JavaCPP, bindings file) of
 * classes loaded before it cannot be wrapped, since a loaded class cannot gain methods. Each gets
 * its site as at class load, and {@link CallSiteTransformer} rewrites the loaded classes that call it
 * (and those loaded later). A call made through reflection or a method handle made before the
 * attach is not a call site, and stays untracked.
 */
public final class LoadedNatives {
    private LoadedNatives() {
    }

    /** Reaches them and returns what was done, in one line for the attach command. */
    public static String reach(Instrumentation inst, NativeBridge bridge) {
        NativeMethodTransformer transformer = bridge.transformer();
        long start = System.nanoTime();
        Map<String, NativeSite> sites = new HashMap<>();
        Set<String> names = new LinkedHashSet<>();
        Set<String> owners = new LinkedHashSet<>();
        List<Class<?>> candidates = new ArrayList<>();
        for (Class<?> c : inst.getAllLoadedClasses()) {
            ClassLoader loader = c.getClassLoader();
            if (loader == null || loader == ClassLoader.getPlatformClassLoader() || c.isArray()
                    || c.isHidden() || !inst.isModifiableClass(c)) {
                continue;
            }
            candidates.add(c);
            Method[] methods;
            try {
                methods = c.getDeclaredMethods();
            } catch (LinkageError | RuntimeException e) {
                continue; // a class whose methods cannot be listed cannot be called into either
            }
            String internal = c.getName().replace('.', '/');
            String label = null;
            for (Method m : methods) {
                if (!Modifier.isNative(m.getModifiers()) || m.getName().startsWith(bridge.prefix())) {
                    continue;
                }
                if (label == null) {
                    byte[] bytes = classBytes(c);
                    label = bytes == null ? NativeBridge.JNI : ClassScan.bridgeOf(bytes);
                }
                if (label.equals(NativeBridge.JNA_DIRECT) && !transformer.wrapsJnaDirect()) {
                    continue;
                }
                String desc = Type.getMethodDescriptor(m);
                int id = transformer.siteFor(loader, internal, label, m.getModifiers(), m.getName(), desc, null,
                        new ArrayList<>());
                if (id >= 0) {
                    NativeSite site = bridge.site(id);
                    site.reachedThroughCallSites();
                    sites.put(internal + "." + m.getName() + desc, site);
                    names.add(m.getName());
                    owners.add(c.getName());
                }
            }
        }
        if (sites.isEmpty()) {
            return "JNA direct mapping, JNI and JavaCPP native methods: none was loaded before the attach;"
                    + " wrapped as their classes load";
        }
        CallSiteTransformer rewriter = new CallSiteTransformer(sites, new ClassScan(names));
        inst.addTransformer(rewriter, true);
        List<Class<?>> callers = new ArrayList<>();
        for (Class<?> c : candidates) {
            byte[] bytes = classBytes(c);
            if (bytes != null && rewriter.mayCall(bytes)) {
                callers.add(c);
            }
        }
        for (Class<?> c : callers) {
            try {
                inst.retransformClasses(c);
            } catch (UnmodifiableClassException | RuntimeException | LinkageError e) {
                Log.warn("cannot rewrite the NCCL/CUDA calls in " + c.getName() + ", they run untracked: " + e);
            }
        }
        int calls = 0;
        for (int n : rewriter.rewritten.values()) {
            calls += n;
        }
        long millis = (System.nanoTime() - start) / 1_000_000;
        return "JNA direct mapping, JNI and JavaCPP native methods: " + sites.size() + " in " + plural(owners.size(),
                "class") + " loaded before the attach (" + String.join(", ", first(owners, 3)) + "), reached through "
                + plural(calls, "call site") + " rewritten in " + plural(rewritten(rewriter), "class") + " ("
                + millis + " ms); classes loaded from now on are wrapped as they load";
    }

    private static String plural(int n, String word) {
        return n + " " + word + (n == 1 ? "" : word.endsWith("s") ? "es" : "s");
    }

    private static int rewritten(CallSiteTransformer rewriter) {
        return rewriter.rewritten.size();
    }

    private static List<String> first(Set<String> items, int n) {
        List<String> out = new ArrayList<>();
        for (String s : items) {
            if (out.size() == n) {
                out.add("...");
                break;
            }
            out.add(s);
        }
        return out;
    }

    /** The class file as its loader has it, or null (a generated class, or one from no resource). */
    private static byte[] classBytes(Class<?> c) {
        ClassLoader loader = c.getClassLoader();
        if (loader == null) {
            return null;
        }
        try (InputStream in = loader.getResourceAsStream(c.getName().replace('.', '/') + ".class")) {
            return in == null ? null : in.readAllBytes();
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }
}
