package dev.ncclguard.bridge.natives;

import net.bytebuddy.jar.asm.ClassReader;
import net.bytebuddy.jar.asm.ClassVisitor;
import net.bytebuddy.jar.asm.ClassWriter;
import net.bytebuddy.jar.asm.MethodVisitor;
import net.bytebuddy.jar.asm.Opcodes;
import net.bytebuddy.jar.asm.Type;

/**
 * Turns the renamed natives of a wrapped class into Java methods that return a fixed value, so that
 * the wrappers run their whole course (enter, the "native", exit) in a unit test, with no library
 * to bind. Loads the result in a fresh class loader.
 */
final class StubbedNatives {
    private StubbedNatives() {
    }

    /** {@code wrapped} with each native named {@code prefix...} answering {@code result} (widened or 0/null). */
    static Class<?> load(Class<?> fixture, byte[] wrapped, String prefix, int result) throws ClassNotFoundException {
        ClassReader reader = new ClassReader(wrapped);
        ClassWriter writer = new ClassWriter(reader, ClassWriter.COMPUTE_MAXS);
        reader.accept(new ClassVisitor(Opcodes.ASM9, writer) {
            @Override
            public MethodVisitor visitMethod(int access, String name, String desc, String signature, String[] exceptions) {
                if ((access & Opcodes.ACC_NATIVE) == 0 || !name.startsWith(prefix)) {
                    return super.visitMethod(access, name, desc, signature, exceptions);
                }
                MethodVisitor mv = super.visitMethod(access & ~Opcodes.ACC_NATIVE, name, desc, signature, exceptions);
                mv.visitCode();
                Type ret = Type.getReturnType(desc);
                switch (ret.getSort()) {
                    case Type.VOID -> {
                    }
                    case Type.LONG -> mv.visitLdcInsn((long) result);
                    case Type.FLOAT -> mv.visitLdcInsn((float) result);
                    case Type.DOUBLE -> mv.visitLdcInsn((double) result);
                    case Type.OBJECT, Type.ARRAY -> mv.visitInsn(Opcodes.ACONST_NULL);
                    default -> mv.visitLdcInsn(result);
                }
                mv.visitInsn(ret.getOpcode(Opcodes.IRETURN));
                mv.visitMaxs(0, 0);
                mv.visitEnd();
                return null;
            }
        }, 0);
        byte[] bytes = writer.toByteArray();
        return NativeFixtures.define(fixture.getName(), bytes, StubbedNatives.class.getClassLoader());
    }
}
