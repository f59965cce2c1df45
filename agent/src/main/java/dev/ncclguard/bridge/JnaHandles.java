package dev.ncclguard.bridge;

import dev.ncclguard.bootstrap.JnaHandle;
import dev.ncclguard.log.Log;
import java.lang.invoke.MethodHandles;
import java.lang.reflect.Constructor;
import net.bytebuddy.jar.asm.ClassWriter;
import net.bytebuddy.jar.asm.MethodVisitor;
import net.bytebuddy.jar.asm.Opcodes;

/**
 * Readers of the address a handle argument holds, per argument class, for the hot path of the JNA
 * bridge. For JNA's Pointer and PointerType they are classes generated into JNA's own package and
 * class loader (the agent never links JNA, which may be any 5.x in any loader): the read is then a
 * call the JIT inlines, where a method handle held in a field is not. Other classes, and a JNA
 * whose package the agent may not define classes in (a named module), use {@link JnaValues}.
 */
final class JnaHandles {
    static final String POINTER = "com.sun.jna.Pointer";
    static final String POINTER_TYPE = "com.sun.jna.PointerType";
    private static final String SUPER = JnaHandle.class.getName().replace('.', '/');

    private static final ClassValue<JnaHandle> BY_CLASS = new ClassValue<>() {
        @Override
        protected JnaHandle computeValue(Class<?> type) {
            return create(type);
        }
    };

    /** Per JNA Pointer or PointerType class: the constructor of its generated reader, or null. */
    private static final ClassValue<Constructor<?>> GENERATED = new ClassValue<>() {
        @Override
        protected Constructor<?> computeValue(Class<?> base) {
            return generate(base);
        }
    };

    private JnaHandles() {
    }

    /** The reader of arguments of exactly this class. */
    static JnaHandle of(Class<?> type) {
        return BY_CLASS.get(type);
    }

    private static JnaHandle create(Class<?> type) {
        Class<?> base = ancestor(type, POINTER);
        if (base == null) {
            base = ancestor(type, POINTER_TYPE);
        }
        Constructor<?> generated = base == null ? null : GENERATED.get(base);
        if (generated != null) {
            try {
                return (JnaHandle) generated.newInstance(type);
            } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
                Log.once("jna-handle-new", "reading " + type.getName() + " through method handles: " + e);
            }
        }
        return new ReaderHandle(type, JnaValues.readerOf(type));
    }

    private static Class<?> ancestor(Class<?> type, String name) {
        for (Class<?> c = type; c != null; c = c.getSuperclass()) {
            if (c.getName().equals(name)) {
                return c;
            }
        }
        return null;
    }

    /** Defines the reader of {@code base} (Pointer or PointerType) next to it, in its package and loader. */
    private static Constructor<?> generate(Class<?> base) {
        boolean pointer = base.getName().equals(POINTER);
        String name = base.getPackageName() + (pointer ? ".NcclguardPointerHandle" : ".NcclguardPointerTypeHandle");
        Class<?> defined;
        try {
            MethodHandles.Lookup lookup = MethodHandles.privateLookupIn(base, MethodHandles.lookup());
            try {
                defined = lookup.defineClass(bytes(name.replace('.', '/'), base.getName().replace('.', '/'), pointer));
            } catch (LinkageError e) {
                // another thread defined it first (a ClassValue may compute twice)
                defined = Class.forName(name, false, base.getClassLoader());
            }
            if (defined.getSuperclass() != JnaHandle.class) {
                throw new IllegalStateException(name + " extends another " + SUPER + " than the agent's");
            }
            return defined.getConstructor(Class.class);
        } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
            Log.once("jna-handle-" + base.getClassLoader(), "reading JNA handles of " + base.getClassLoader()
                    + " through method handles, a little slower: " + e);
            return null;
        }
    }

    /**
     * {@code public final class name extends JnaHandle}: {@code of(arg)} is
     * {@code Pointer.nativeValue((Pointer) arg)}, or for a PointerType
     * {@code Pointer.nativeValue(((PointerType) arg).getPointer())}. No branch, so no stack map frame.
     */
    private static byte[] bytes(String name, String base, boolean pointer) {
        String pointerClass = POINTER.replace('.', '/');
        ClassWriter cw = new ClassWriter(ClassWriter.COMPUTE_MAXS);
        cw.visit(Opcodes.V1_8, Opcodes.ACC_PUBLIC | Opcodes.ACC_FINAL | Opcodes.ACC_SUPER, name, null, SUPER, null);
        MethodVisitor init = cw.visitMethod(Opcodes.ACC_PUBLIC, "<init>", "(Ljava/lang/Class;)V", null, null);
        init.visitCode();
        init.visitVarInsn(Opcodes.ALOAD, 0);
        init.visitVarInsn(Opcodes.ALOAD, 1);
        init.visitMethodInsn(Opcodes.INVOKESPECIAL, SUPER, "<init>", "(Ljava/lang/Class;)V", false);
        init.visitInsn(Opcodes.RETURN);
        init.visitMaxs(0, 0);
        init.visitEnd();
        MethodVisitor of = cw.visitMethod(Opcodes.ACC_PUBLIC, "of", "(Ljava/lang/Object;)J", null, null);
        of.visitCode();
        of.visitVarInsn(Opcodes.ALOAD, 1);
        of.visitTypeInsn(Opcodes.CHECKCAST, base);
        if (!pointer) {
            of.visitMethodInsn(Opcodes.INVOKEVIRTUAL, base, "getPointer", "()L" + pointerClass + ";", false);
        }
        of.visitMethodInsn(Opcodes.INVOKESTATIC, pointerClass, "nativeValue", "(L" + pointerClass + ";)J", false);
        of.visitInsn(Opcodes.LRETURN);
        of.visitMaxs(0, 0);
        of.visitEnd();
        cw.visitEnd();
        return cw.toByteArray();
    }

    /** Any other class: Number, JavaCPP, a JNA the agent could not define a class for. */
    private static final class ReaderHandle extends JnaHandle {
        private final JnaValues.Reader reader;

        ReaderHandle(Class<?> type, JnaValues.Reader reader) {
            super(type);
            this.reader = reader;
        }

        @Override
        public long of(Object arg) {
            return JnaValues.handle(reader, arg);
        }
    }
}
