package dev.ncclguard.weave;

import net.bytebuddy.jar.asm.ClassReader;
import net.bytebuddy.jar.asm.ClassVisitor;
import net.bytebuddy.jar.asm.ClassWriter;
import net.bytebuddy.jar.asm.MethodVisitor;
import net.bytebuddy.jar.asm.Opcodes;

/**
 * The FFM bridge's two hooks woven into the JDK (Java 22+), with plain ASM: before the return of
 * the native library lookups every SymbolLookup ends in ({@code NativeLibrary.find(String)}, in
 * its two implementations), {@code Hooks.ffmSymbol(address, name)}; before the return of
 * {@code AbstractLinker.downcallHandle(MemorySegment, FunctionDescriptor, Option...)},
 * {@code handle = Hooks.ffmDowncall(handle, symbol)}. Neither adds a local or a branch.
 */
public final class FfmWeaver {
    public static final String NATIVE_LIBRARY_IMPL = "jdk/internal/loader/NativeLibraries$NativeLibraryImpl";
    public static final String RAW_NATIVE_LIBRARY_IMPL = "jdk/internal/loader/RawNativeLibraries$RawNativeLibraryImpl";
    public static final String ABSTRACT_LINKER = "jdk/internal/foreign/abi/AbstractLinker";
    private static final String HOOKS = "dev/ncclguard/bootstrap/Hooks";
    private static final String DOWNCALL_DESC = "(Ljava/lang/foreign/MemorySegment;Ljava/lang/foreign/FunctionDescriptor;"
            + "[Ljava/lang/foreign/Linker$Option;)Ljava/lang/invoke/MethodHandle;";

    private FfmWeaver() {
    }

    /** The class with its hook woven in, or null when it has not the shape this agent knows. */
    public static byte[] weave(String className, byte[] classfile) {
        if (className.equals(ABSTRACT_LINKER)) {
            return beforeReturn(classfile, "downcallHandle", DOWNCALL_DESC, Opcodes.ARETURN, mv -> {
                mv.visitVarInsn(Opcodes.ALOAD, 1);
                mv.visitMethodInsn(Opcodes.INVOKESTATIC, HOOKS, "ffmDowncall",
                        "(Ljava/lang/Object;Ljava/lang/Object;)Ljava/lang/Object;", false);
                mv.visitTypeInsn(Opcodes.CHECKCAST, "java/lang/invoke/MethodHandle");
            });
        }
        return beforeReturn(classfile, "find", "(Ljava/lang/String;)J", Opcodes.LRETURN, mv -> {
            mv.visitVarInsn(Opcodes.ALOAD, 1);
            mv.visitMethodInsn(Opcodes.INVOKESTATIC, HOOKS, "ffmSymbol", "(JLjava/lang/String;)J", false);
        });
    }

    private interface Code {
        void emit(MethodVisitor mv);
    }

    /** Inserts {@code code} before each {@code returnOpcode} of one instance method; null if absent. */
    private static byte[] beforeReturn(byte[] classfile, String name, String desc, int returnOpcode, Code code) {
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
