package dev.ncclguard.bridge.ffm;

import dev.ncclguard.bootstrap.Hooks;
import dev.ncclguard.log.Log;
import dev.ncclguard.track.Tracker;
import java.lang.instrument.ClassFileTransformer;
import java.lang.instrument.Instrumentation;
import java.lang.instrument.UnmodifiableClassException;
import java.security.ProtectionDomain;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import net.bytebuddy.jar.asm.ClassReader;
import net.bytebuddy.jar.asm.ClassVisitor;
import net.bytebuddy.jar.asm.ClassWriter;
import net.bytebuddy.jar.asm.MethodVisitor;
import net.bytebuddy.jar.asm.Opcodes;

/**
 * Weaves the FFM bridge's two hooks into the JDK (Java 22+), with plain ASM: before the return of
 * the native library lookups every SymbolLookup ends in ({@code NativeLibrary.find(String)}, in
 * its two implementations), {@code Hooks.ffmSymbol(address, name)}; before the return of
 * {@code AbstractLinker.downcallHandle(MemorySegment, FunctionDescriptor, Option...)},
 * {@code handle = Hooks.ffmDowncall(handle, symbol)}. Neither adds a local or a branch.
 */
public final class FfmTransformer implements ClassFileTransformer {
    static final String NATIVE_LIBRARY_IMPL = "jdk/internal/loader/NativeLibraries$NativeLibraryImpl";
    static final String RAW_NATIVE_LIBRARY_IMPL = "jdk/internal/loader/RawNativeLibraries$RawNativeLibraryImpl";
    static final String ABSTRACT_LINKER = "jdk/internal/foreign/abi/AbstractLinker";
    private static final Set<String> TARGETS = Set.of(NATIVE_LIBRARY_IMPL, RAW_NATIVE_LIBRARY_IMPL, ABSTRACT_LINKER);
    private static final String HOOKS = "dev/ncclguard/bootstrap/Hooks";
    private static final String DOWNCALL_DESC = "(Ljava/lang/foreign/MemorySegment;Ljava/lang/foreign/FunctionDescriptor;"
            + "[Ljava/lang/foreign/Linker$Option;)Ljava/lang/invoke/MethodHandle;";

    private FfmTransformer() {
    }

    /** On Java 22 and later: plugs the FFM bridge in and weaves its hooks. Does nothing before. */
    public static void install(Instrumentation inst, Tracker tracker) {
        if (Runtime.version().feature() < 22) {
            return;
        }
        Hooks.ffm = new FfmBridge(tracker);
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
            byte[] woven = className.equals(ABSTRACT_LINKER)
                    ? beforeReturn(classfile, "downcallHandle", DOWNCALL_DESC, Opcodes.ARETURN, mv -> {
                        mv.visitVarInsn(Opcodes.ALOAD, 1);
                        mv.visitMethodInsn(Opcodes.INVOKESTATIC, HOOKS, "ffmDowncall",
                                "(Ljava/lang/Object;Ljava/lang/Object;)Ljava/lang/Object;", false);
                        mv.visitTypeInsn(Opcodes.CHECKCAST, "java/lang/invoke/MethodHandle");
                    })
                    : beforeReturn(classfile, "find", "(Ljava/lang/String;)J", Opcodes.LRETURN, mv -> {
                        mv.visitVarInsn(Opcodes.ALOAD, 1);
                        mv.visitMethodInsn(Opcodes.INVOKESTATIC, HOOKS, "ffmSymbol", "(JLjava/lang/String;)J", false);
                    });
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

    private interface Code {
        void emit(MethodVisitor mv);
    }

    /** Inserts {@code code} before each {@code returnOpcode} of one instance method; null if absent. */
    static byte[] beforeReturn(byte[] classfile, String name, String desc, int returnOpcode, Code code) {
        ClassReader reader = new ClassReader(classfile);
        ClassWriter writer = new ClassWriter(reader, ClassWriter.COMPUTE_MAXS);
        boolean[] found = new boolean[1];
        reader.accept(new ClassVisitor(Opcodes.ASM9, writer) {
            @Override
            public MethodVisitor visitMethod(int access, String n, String d, String signature, String[] exceptions) {
                MethodVisitor mv = super.visitMethod(access, n, d, signature, exceptions);
                if (!n.equals(name) || !d.equals(desc) || (access & (Opcodes.ACC_STATIC | Opcodes.ACC_ABSTRACT)) != 0) {
                    return mv;
                }
                found[0] = true;
                return new MethodVisitor(Opcodes.ASM9, mv) {
                    @Override
                    public void visitInsn(int opcode) {
                        if (opcode == returnOpcode) {
                            code.emit(mv);
                        }
                        super.visitInsn(opcode);
                    }
                };
            }
        }, 0);
        return found[0] ? writer.toByteArray() : null;
    }
}
