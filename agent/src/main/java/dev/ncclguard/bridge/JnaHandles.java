package dev.ncclguard.bridge;

import dev.ncclguard.bootstrap.JnaHandle;
import dev.ncclguard.log.Log;
import java.lang.invoke.MethodHandles;
import net.bytebuddy.jar.asm.ClassWriter;
import net.bytebuddy.jar.asm.Label;
import net.bytebuddy.jar.asm.MethodVisitor;
import net.bytebuddy.jar.asm.Opcodes;

/**
 * Readers of the address a handle argument holds, for the hot path of the JNA bridge. Each JNA
 * (the agent never links JNA, which may be any 5.x in any loader) gets a class generated into its
 * own package and class loader that reads its Pointer and PointerType with two instanceof checks
 * and a static call, code the JIT inlines where a method handle held in a field is not. Any other
 * argument goes to {@link #OTHER}, which reads it through {@link JnaValues}, as does everything
 * for a JNA whose package the agent may not define classes in (a named module).
 */
final class JnaHandles {
    static final String POINTER = "com/sun/jna/Pointer";
    static final String POINTER_TYPE = "com/sun/jna/PointerType";
    private static final String SUPER = JnaHandle.class.getName().replace('.', '/');
    private static final String NAME = "NcclguardHandle";

    /** Numbers (handles mapped as long) directly; the rest through JnaValues' readers. */
    static final JnaHandle OTHER = new JnaHandle() {
        @Override
        public long of(Object arg) {
            return arg instanceof Long ? (Long) arg : JnaValues.handle(arg);
        }
    };

    /** Per JNA Pointer class: its generated reader, or OTHER. */
    private static final ClassValue<JnaHandle> GENERATED = new ClassValue<>() {
        @Override
        protected JnaHandle computeValue(Class<?> pointer) {
            return generate(pointer);
        }
    };

    private JnaHandles() {
    }

    /** The reader for arguments like {@code arg}: its JNA's generated one, else {@link #OTHER}. Never null. */
    static JnaHandle forArgument(Object arg) {
        for (Class<?> c = arg == null ? null : arg.getClass(); c != null; c = c.getSuperclass()) {
            String name = c.getName();
            if (name.equals("com.sun.jna.Pointer")) {
                return GENERATED.get(c);
            }
            if (name.equals("com.sun.jna.PointerType")) {
                try {
                    return GENERATED.get(Class.forName("com.sun.jna.Pointer", false, c.getClassLoader()));
                } catch (ClassNotFoundException | LinkageError e) {
                    return OTHER;
                }
            }
        }
        return OTHER;
    }

    /** Defines the reader of {@code pointer}'s JNA next to it, in its package and loader. */
    private static JnaHandle generate(Class<?> pointer) {
        String name = pointer.getPackageName() + "." + NAME;
        try {
            MethodHandles.Lookup lookup = MethodHandles.privateLookupIn(pointer, MethodHandles.lookup());
            Class<?> defined;
            try {
                defined = lookup.defineClass(bytes(name.replace('.', '/')));
            } catch (LinkageError e) {
                // another thread defined it first (a ClassValue may compute twice)
                defined = Class.forName(name, false, pointer.getClassLoader());
            }
            return (JnaHandle) defined.getConstructor(JnaHandle.class).newInstance(OTHER);
        } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
            Log.once("jna-handle-" + pointer.getClassLoader(), "reading JNA handles of " + pointer.getClassLoader()
                    + " through method handles, a little slower: " + e);
            return OTHER;
        }
    }

    /**
     * {@code public final class NcclguardHandle extends JnaHandle}, whose {@code of(arg)} is
     * {@code arg instanceof Pointer ? Pointer.nativeValue((Pointer) arg) : arg instanceof
     * PointerType ? Pointer.nativeValue(((PointerType) arg).getPointer()) : other.of(arg)}.
     */
    private static byte[] bytes(String name) {
        ClassWriter cw = new ClassWriter(ClassWriter.COMPUTE_MAXS);
        cw.visit(Opcodes.V1_8, Opcodes.ACC_PUBLIC | Opcodes.ACC_FINAL | Opcodes.ACC_SUPER, name, null, SUPER, null);
        String handleDesc = "L" + SUPER + ";";
        cw.visitField(Opcodes.ACC_PRIVATE | Opcodes.ACC_FINAL, "other", handleDesc, null, null).visitEnd();

        MethodVisitor init = cw.visitMethod(Opcodes.ACC_PUBLIC, "<init>", "(" + handleDesc + ")V", null, null);
        init.visitCode();
        init.visitVarInsn(Opcodes.ALOAD, 0);
        init.visitMethodInsn(Opcodes.INVOKESPECIAL, SUPER, "<init>", "()V", false);
        init.visitVarInsn(Opcodes.ALOAD, 0);
        init.visitVarInsn(Opcodes.ALOAD, 1);
        init.visitFieldInsn(Opcodes.PUTFIELD, name, "other", handleDesc);
        init.visitInsn(Opcodes.RETURN);
        init.visitMaxs(0, 0);
        init.visitEnd();

        String nativeValue = "(L" + POINTER + ";)J";
        MethodVisitor of = cw.visitMethod(Opcodes.ACC_PUBLIC, "of", "(Ljava/lang/Object;)J", null, null);
        of.visitCode();
        Label notPointer = new Label();
        Label notPointerType = new Label();
        of.visitVarInsn(Opcodes.ALOAD, 1);
        of.visitTypeInsn(Opcodes.INSTANCEOF, POINTER);
        of.visitJumpInsn(Opcodes.IFEQ, notPointer);
        of.visitVarInsn(Opcodes.ALOAD, 1);
        of.visitTypeInsn(Opcodes.CHECKCAST, POINTER);
        of.visitMethodInsn(Opcodes.INVOKESTATIC, POINTER, "nativeValue", nativeValue, false);
        of.visitInsn(Opcodes.LRETURN);
        of.visitLabel(notPointer);
        of.visitFrame(Opcodes.F_SAME, 0, null, 0, null);
        of.visitVarInsn(Opcodes.ALOAD, 1);
        of.visitTypeInsn(Opcodes.INSTANCEOF, POINTER_TYPE);
        of.visitJumpInsn(Opcodes.IFEQ, notPointerType);
        of.visitVarInsn(Opcodes.ALOAD, 1);
        of.visitTypeInsn(Opcodes.CHECKCAST, POINTER_TYPE);
        of.visitMethodInsn(Opcodes.INVOKEVIRTUAL, POINTER_TYPE, "getPointer", "()L" + POINTER + ";", false);
        of.visitMethodInsn(Opcodes.INVOKESTATIC, POINTER, "nativeValue", nativeValue, false);
        of.visitInsn(Opcodes.LRETURN);
        of.visitLabel(notPointerType);
        of.visitFrame(Opcodes.F_SAME, 0, null, 0, null);
        of.visitVarInsn(Opcodes.ALOAD, 0);
        of.visitFieldInsn(Opcodes.GETFIELD, name, "other", handleDesc);
        of.visitVarInsn(Opcodes.ALOAD, 1);
        of.visitMethodInsn(Opcodes.INVOKEVIRTUAL, SUPER, "of", "(Ljava/lang/Object;)J", false);
        of.visitInsn(Opcodes.LRETURN);
        of.visitMaxs(0, 0);
        of.visitEnd();
        cw.visitEnd();
        return cw.toByteArray();
    }
}
