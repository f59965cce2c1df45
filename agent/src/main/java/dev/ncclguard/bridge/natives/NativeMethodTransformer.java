package dev.ncclguard.bridge.natives;

import dev.ncclguard.bridge.WrappedNatives;
import dev.ncclguard.catalog.Catalog;
import dev.ncclguard.catalog.NativeFunction;
import dev.ncclguard.config.Bindings;
import dev.ncclguard.log.Log;
import dev.ncclguard.weave.NativeWrapper;
import dev.ncclguard.weave.Slots;
import java.lang.instrument.ClassFileTransformer;
import java.security.ProtectionDomain;
import java.util.ArrayList;
import java.util.List;
import net.bytebuddy.jar.asm.ClassReader;
import net.bytebuddy.jar.asm.ClassWriter;
import net.bytebuddy.jar.asm.Opcodes;
import net.bytebuddy.jar.asm.Type;

/**
 * Wraps, as each class is defined, its native methods named as a catalog function or listed in
 * the bindings file (see {@link NativeWrapper}). A class is parsed only when {@link ClassScan}
 * finds such a native method in its bytes, or when the bindings file names it; every other class
 * costs one pass over its constant pool. Registered as not retransformable: wrapping adds methods,
 * which only a class's first definition may do.
 */
public final class NativeMethodTransformer implements ClassFileTransformer {
    private final NativeBridge bridge;
    private final Bindings bindings;
    private final String prefix;
    private final boolean wrapJnaDirect;
    private final ClassScan scan;

    /** The self-check's JDK method: internal class name, method, descriptor; null when unarmed. */
    private volatile String[] probe;
    private volatile int probeSite = -1;
    private volatile boolean probeWrapped;

    /** Under -javaagent, the install check still to run before the first class is wrapped; else null. */
    private volatile NativeMethods.Check pendingCheck;
    private Thread checking;
    /** The install check failed: nothing is wrapped. */
    private volatile boolean failedCheck;

    private static final ClassLoader PLATFORM = ClassLoader.getPlatformClassLoader();

    NativeMethodTransformer(NativeBridge bridge, Bindings bindings, String prefix, boolean wrapJnaDirect) {
        this.bridge = bridge;
        this.bindings = bindings;
        this.prefix = prefix;
        this.wrapJnaDirect = wrapJnaDirect;
        List<String> names = new ArrayList<>();
        for (NativeFunction fn : Catalog.all()) {
            names.add(fn.symbol());
            if (fn.symbol().startsWith("nccl")) {
                names.add("p" + fn.symbol());
            }
        }
        this.scan = new ClassScan(names);
    }

    /** Whether JNA direct-mapped classes are wrapped (not when jna.profiler.prefix is one JNA cannot strip). */
    public boolean wrapsJnaDirect() {
        return wrapJnaDirect;
    }

    /** Wraps {@code method} of {@code internalClass} for the self-check when that class is defined. */
    void armProbe(String internalClass, String method, String descriptor, int site) {
        probeWrapped = false;
        probeSite = site;
        probe = new String[] {internalClass, method, descriptor};
    }

    boolean probeWrapped() {
        return probeWrapped;
    }

    /** Runs {@code check} when a class is first about to be wrapped (and makes others wait for it). */
    void checkBeforeFirstWrap(NativeMethods.Check check) {
        pendingCheck = check;
    }

    /** False when the install check failed. Runs it if still pending; the checking thread's own loads pass. */
    private boolean mayWrap() {
        if (pendingCheck == null) {
            return !failedCheck;
        }
        synchronized (this) {
            NativeMethods.Check check = pendingCheck;
            if (check != null && checking != Thread.currentThread()) {
                checking = Thread.currentThread();
                try {
                    failedCheck = !check.passes();
                } finally {
                    checking = null;
                    pendingCheck = null;
                }
            }
        }
        return !failedCheck;
    }

    @Override
    public byte[] transform(Module module, ClassLoader loader, String className, Class<?> redefined,
                            ProtectionDomain domain, byte[] classfile) {
        String[] p = probe;
        if (module != null && module.isNamed() && (loader == null || loader == PLATFORM)
                && (p == null || !p[0].equals(className))) {
            return null; // the JDK's own modules: no NCCL or CUDA natives there, and most classes loaded are these
        }
        byte[] wrapped = transform(loader, className, redefined, domain, classfile);
        if (wrapped != null) {
            dev.ncclguard.weave.HookReads.readHooks(module);
        }
        return wrapped;
    }

    @Override
    public byte[] transform(ClassLoader loader, String className, Class<?> redefined,
                            ProtectionDomain domain, byte[] classfile) {
        if (className == null || redefined != null || classfile == null) {
            return null;
        }
        String[] p = probe;
        boolean isProbe = p != null && p[0].equals(className);
        boolean bound = bindings.hasClass(className);
        if (!isProbe && !bound && !scan.hasNativeNamed(classfile)) {
            return null;
        }
        if (!isProbe && !mayWrap()) {
            return null;
        }
        try {
            String label = isProbe ? NativeBridge.JNI : ClassScan.bridgeOf(classfile);
            if (label.equals(NativeBridge.JNA_DIRECT) && !wrapJnaDirect) {
                Log.once("jna-direct-off", "JNA direct-mapped class " + className.replace('/', '.')
                        + " is not tracked: jna.profiler.prefix is set to an empty string");
                return null;
            }
            List<Bindings.Entry> used = new ArrayList<>();
            byte[] wrapped = Rewrite.wrap(this, loader, className, label, p, used, classfile);
            if (bound) {
                warnUnused(className, used);
            }
            if (wrapped != null && isProbe) {
                probeWrapped = true;
            }
            return wrapped;
        } catch (Throwable t) {
            Log.warn("cannot wrap the native methods of " + className.replace('/', '.') + ", they run untracked: " + t);
            return null;
        }
    }

    /**
     * The ASM part, in a class of its own: verifying the transformer's own methods then loads no
     * ASM class, and an application without such native methods never loads ASM at all.
     */
    private static final class Rewrite {
        private Rewrite() {
        }

        /** The class with its native methods wrapped, or null when none was. */
        static byte[] wrap(NativeMethodTransformer t, ClassLoader loader, String className, String label, String[] p,
                List<Bindings.Entry> used, byte[] classfile) {
            ClassReader reader = new ClassReader(classfile);
            ClassWriter writer = new ClassWriter(reader, 0);
            NativeWrapper wrapper = new NativeWrapper(writer, t.prefix,
                    (access, name, descriptor) -> t.siteFor(loader, className, label, access, name, descriptor, p, used),
                    site -> site == t.probeSite ? Slots.NONE : t.bridge.site(site).slots);
            reader.accept(wrapper, 0);
            return wrapper.wrappedAny() ? writer.toByteArray() : null;
        }
    }

    public int siteFor(ClassLoader loader, String className, String label, int access, String name,
                        String descriptor, String[] p, List<Bindings.Entry> used) {
        if (p != null && p[0].equals(className) && p[1].equals(name) && p[2].equals(descriptor)) {
            return probeSite;
        }
        Type[] params = Type.getArgumentTypes(descriptor);
        Type returned = Type.getReturnType(descriptor);
        boolean isStatic = (access & Opcodes.ACC_STATIC) != 0;
        String owner = className.replace('/', '.');
        Bindings.Entry entry = bindings.find(className, name, descriptor);
        if (entry != null) {
            used.add(entry);
            String problem = mismatch(entry.fn(), params.length, returned);
            if (problem != null) {
                Log.warn("bindings line " + entry.line() + ": " + owner + "." + name + descriptor + " " + problem
                        + "; not tracked");
                return -1;
            }
            NativeFunction catalog = Catalog.lookup(entry.fn().symbol());
            int id = bridge.add(site -> new NativeSite(site, entry.fn(), label, owner, loader, name, descriptor, isStatic,
                    params.length, returnKind(returned), Bindings.cToJava(catalog, entry.fn())));
            WrappedNatives.add(owner, name);
            return id;
        }
        NativeFunction fn = Catalog.lookup(name);
        if (fn == null) {
            return -1;
        }
        int id = bridge.add(site -> new NativeSite(site, fn, label, owner, loader, name, descriptor, isStatic,
                params.length, returnKind(returned), NativeSite.identity(params.length)));
        // its C code's own NCCL and CUDA calls are this site's: the interposer leaves them out
        WrappedNatives.add(owner, name);
        return id;
    }

    /** Why a bindings entry without a descriptor does not fit the method it named, or null. */
    private static String mismatch(NativeFunction fn, int paramCount, Type returned) {
        if (fn.handle() == NativeSite.RESULT && returned.getSort() != Type.LONG) {
            return "returns " + returned.getClassName() + ", not the long handle=return needs";
        }
        for (int position : fn.positions()) {
            if (position != NativeSite.RESULT && position >= paramCount) {
                return "has " + paramCount + " argument(s), the bindings line names argument " + position;
            }
        }
        return null;
    }

    private void warnUnused(String className, List<Bindings.Entry> used) {
        for (Bindings.Entry e : bindings.entries()) {
            if (e.internalClass().equals(className) && !used.contains(e)) {
                Log.warn("bindings line " + e.line() + ": " + className.replace('/', '.') + " has no native method "
                        + e.method() + (e.descriptor() == null ? "" : e.descriptor()) + "; nothing tracked for it");
            }
        }
    }

    private static char returnKind(Type t) {
        switch (t.getSort()) {
            case Type.BOOLEAN: case Type.BYTE: case Type.CHAR: case Type.SHORT: case Type.INT:
                return 'I';
            case Type.LONG:
                return 'J';
            case Type.FLOAT:
                return 'F';
            case Type.DOUBLE:
                return 'D';
            case Type.VOID:
                return 'V';
            default:
                return 'L';
        }
    }
}
