package dev.ncclguard.bridge;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;

import com.sun.jna.Memory;
import com.sun.jna.Pointer;
import com.sun.jna.PointerType;
import com.sun.jna.ptr.PointerByReference;
import dev.ncclguard.bootstrap.JnaHandle;
import java.net.URL;
import java.net.URLClassLoader;
import net.bytebuddy.jar.asm.ClassWriter;
import net.bytebuddy.jar.asm.Label;
import net.bytebuddy.jar.asm.MethodVisitor;
import net.bytebuddy.jar.asm.Opcodes;
import org.junit.jupiter.api.Test;

class JnaHandlesTest {
    /** A typed handle, as some bindings declare cudaEvent_t. */
    public static class Event extends PointerType {
        public Event(Pointer p) {
            super(p);
        }
    }

    @Test
    void pointersAndPointerTypesAreReadByAClassGeneratedInJnasOwnPackageAndLoader() {
        PointerByReference ref = new PointerByReference();
        for (Object arg : new Object[] {new Pointer(1), new Memory(8), new Event(null), ref}) {
            JnaHandle reader = JnaHandles.forArgument(arg);
            assertEquals("com.sun.jna", reader.getClass().getPackageName(), arg.getClass().getName());
            assertSame(Pointer.class.getClassLoader(), reader.getClass().getClassLoader());
        }
        JnaHandle reader = JnaHandles.forArgument(new Pointer(1));
        assertEquals(0x1234L, reader.of(new Pointer(0x1234L)));
        assertEquals(0x5678L, reader.of(new Event(new Pointer(0x5678L))));
        assertEquals(0L, reader.of(new Event(null)));
        assertEquals(Pointer.nativeValue(ref.getPointer()), reader.of(ref));
        assertEquals(0L, reader.of(null));
        assertEquals(42L, reader.of(42L), "what is not of its JNA is read as before");
    }

    @Test
    void otherArgumentsAreReadAsBefore() {
        JnaHandle reader = JnaHandles.forArgument(42L);
        assertSame(JnaHandles.OTHER, reader);
        assertEquals(42L, reader.of(42L));
        assertEquals(7L, reader.of(7));
        assertEquals(0x99L, reader.of(new Pointer(0x99L)));
    }

    /** JNA's classes from its jar again, child first; the rest (the agent's bootstrap classes) from the parent. */
    private static final class OwnJna extends URLClassLoader {
        OwnJna(URL jar) {
            super(new URL[] {jar}, JnaHandlesTest.class.getClassLoader());
        }

        @Override
        protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
            if (!name.startsWith("com.sun.jna.")) {
                return super.loadClass(name, resolve);
            }
            synchronized (getClassLoadingLock(name)) {
                Class<?> c = findLoadedClass(name);
                return c != null ? c : findClass(name);
            }
        }
    }

    @Test
    void aJnaInAnotherClassLoaderGetsItsOwnGeneratedReader() throws Exception {
        URL jar = Pointer.class.getProtectionDomain().getCodeSource().getLocation();
        try (OwnJna loader = new OwnJna(jar)) {
            Class<?> pointer = loader.loadClass("com.sun.jna.Pointer");
            assertNotSame(Pointer.class, pointer);
            Object p = pointer.getConstructor(long.class).newInstance(0x9abcL);
            JnaHandle reader = JnaHandles.forArgument(p);
            assertSame(loader, reader.getClass().getClassLoader());
            JnaHandle ours = JnaHandles.forArgument(new Pointer(1));
            assertNotSame(ours.getClass(), reader.getClass());
            assertEquals(0x9abcL, reader.of(p));
            assertEquals(0x9abcL, ours.of(p), "a reader of another JNA still reads it");
        }
    }

    private static final String JNA_HANDLE = JnaHandle.class.getName().replace('.', '/');

    @Test
    void theKeptClassFileIsTheOneAsmGenerates() {
        assertEquals(java.util.Base64.getEncoder().encodeToString(generated("com/sun/jna/NcclguardHandle")),
                JnaHandles.CLASS_FILE);
        assertArrayEquals(generated("com/sun/jna/NcclguardHandle"), JnaHandles.classFile());
    }

    /**
     * {@code public final class NcclguardHandle extends JnaHandle}, whose {@code of(arg)} is
     * {@code arg instanceof Pointer ? Pointer.nativeValue((Pointer) arg) : arg instanceof
     * PointerType ? Pointer.nativeValue(((PointerType) arg).getPointer()) : other.of(arg)}, and
     * whose {@code pointer}, {@code getLong}, {@code getInt} and {@code getByteArray} read a Pointer.
     */
    static byte[] generated(String name) {
        ClassWriter cw = new ClassWriter(ClassWriter.COMPUTE_MAXS);
        cw.visit(Opcodes.V1_8, Opcodes.ACC_PUBLIC | Opcodes.ACC_FINAL | Opcodes.ACC_SUPER, name, null, JNA_HANDLE, null);
        String handleDesc = "L" + JNA_HANDLE + ";";
        cw.visitField(Opcodes.ACC_PRIVATE | Opcodes.ACC_FINAL, "other", handleDesc, null, null).visitEnd();

        MethodVisitor init = cw.visitMethod(Opcodes.ACC_PUBLIC, "<init>", "(" + handleDesc + ")V", null, null);
        init.visitCode();
        init.visitVarInsn(Opcodes.ALOAD, 0);
        init.visitMethodInsn(Opcodes.INVOKESPECIAL, JNA_HANDLE, "<init>", "()V", false);
        init.visitVarInsn(Opcodes.ALOAD, 0);
        init.visitVarInsn(Opcodes.ALOAD, 1);
        init.visitFieldInsn(Opcodes.PUTFIELD, name, "other", handleDesc);
        init.visitInsn(Opcodes.RETURN);
        init.visitMaxs(0, 0);
        init.visitEnd();

        String nativeValue = "(L" + JnaHandles.POINTER + ";)J";
        MethodVisitor of = cw.visitMethod(Opcodes.ACC_PUBLIC, "of", "(Ljava/lang/Object;)J", null, null);
        of.visitCode();
        Label notPointer = new Label();
        Label notPointerType = new Label();
        of.visitVarInsn(Opcodes.ALOAD, 1);
        of.visitTypeInsn(Opcodes.INSTANCEOF, JnaHandles.POINTER);
        of.visitJumpInsn(Opcodes.IFEQ, notPointer);
        of.visitVarInsn(Opcodes.ALOAD, 1);
        of.visitTypeInsn(Opcodes.CHECKCAST, JnaHandles.POINTER);
        of.visitMethodInsn(Opcodes.INVOKESTATIC, JnaHandles.POINTER, "nativeValue", nativeValue, false);
        of.visitInsn(Opcodes.LRETURN);
        of.visitLabel(notPointer);
        of.visitFrame(Opcodes.F_SAME, 0, null, 0, null);
        of.visitVarInsn(Opcodes.ALOAD, 1);
        of.visitTypeInsn(Opcodes.INSTANCEOF, JnaHandles.POINTER_TYPE);
        of.visitJumpInsn(Opcodes.IFEQ, notPointerType);
        of.visitVarInsn(Opcodes.ALOAD, 1);
        of.visitTypeInsn(Opcodes.CHECKCAST, JnaHandles.POINTER_TYPE);
        of.visitMethodInsn(Opcodes.INVOKEVIRTUAL, JnaHandles.POINTER_TYPE, "getPointer", "()L" + JnaHandles.POINTER + ";",
                false);
        of.visitMethodInsn(Opcodes.INVOKESTATIC, JnaHandles.POINTER, "nativeValue", nativeValue, false);
        of.visitInsn(Opcodes.LRETURN);
        of.visitLabel(notPointerType);
        of.visitFrame(Opcodes.F_SAME, 0, null, 0, null);
        of.visitVarInsn(Opcodes.ALOAD, 0);
        of.visitFieldInsn(Opcodes.GETFIELD, name, "other", handleDesc);
        of.visitVarInsn(Opcodes.ALOAD, 1);
        of.visitMethodInsn(Opcodes.INVOKEVIRTUAL, JNA_HANDLE, "of", "(Ljava/lang/Object;)J", false);
        of.visitInsn(Opcodes.LRETURN);
        of.visitMaxs(0, 0);
        of.visitEnd();

        String pointerDesc = "L" + JnaHandles.POINTER + ";";
        MethodVisitor pointer = cw.visitMethod(Opcodes.ACC_PUBLIC, "pointer", "(Ljava/lang/Object;)Ljava/lang/Object;",
                null, null);
        pointer.visitCode();
        Label notAPointer = new Label();
        pointer.visitVarInsn(Opcodes.ALOAD, 1);
        pointer.visitTypeInsn(Opcodes.INSTANCEOF, JnaHandles.POINTER);
        pointer.visitJumpInsn(Opcodes.IFEQ, notAPointer);
        pointer.visitVarInsn(Opcodes.ALOAD, 1);
        pointer.visitInsn(Opcodes.ARETURN);
        pointer.visitLabel(notAPointer);
        pointer.visitFrame(Opcodes.F_SAME, 0, null, 0, null);
        for (String holder : new String[] {JnaHandles.POINTER_TYPE, JnaHandles.STRUCTURE}) {
            Label notHolder = new Label();
            pointer.visitVarInsn(Opcodes.ALOAD, 1);
            pointer.visitTypeInsn(Opcodes.INSTANCEOF, holder);
            pointer.visitJumpInsn(Opcodes.IFEQ, notHolder);
            pointer.visitVarInsn(Opcodes.ALOAD, 1);
            pointer.visitTypeInsn(Opcodes.CHECKCAST, holder);
            pointer.visitMethodInsn(Opcodes.INVOKEVIRTUAL, holder, "getPointer", "()" + pointerDesc, false);
            pointer.visitInsn(Opcodes.ARETURN);
            pointer.visitLabel(notHolder);
            pointer.visitFrame(Opcodes.F_SAME, 0, null, 0, null);
        }
        pointer.visitInsn(Opcodes.ACONST_NULL);
        pointer.visitInsn(Opcodes.ARETURN);
        pointer.visitMaxs(0, 0);
        pointer.visitEnd();

        String[][] getters = {
            {"getLong", "(Ljava/lang/Object;J)J", "(J)J"},
            {"getInt", "(Ljava/lang/Object;J)I", "(J)I"},
            {"getByteArray", "(Ljava/lang/Object;JI)[B", "(JI)[B"},
        };
        for (String[] g : getters) {
            MethodVisitor get = cw.visitMethod(Opcodes.ACC_PUBLIC, g[0], g[1], null, null);
            get.visitCode();
            get.visitVarInsn(Opcodes.ALOAD, 1);
            get.visitTypeInsn(Opcodes.CHECKCAST, JnaHandles.POINTER);
            get.visitVarInsn(Opcodes.LLOAD, 2);
            if (g[0].equals("getByteArray")) {
                get.visitVarInsn(Opcodes.ILOAD, 4);
            }
            get.visitMethodInsn(Opcodes.INVOKEVIRTUAL, JnaHandles.POINTER, g[0], g[2], false);
            get.visitInsn(g[0].equals("getLong") ? Opcodes.LRETURN : g[0].equals("getInt") ? Opcodes.IRETURN
                    : Opcodes.ARETURN);
            get.visitMaxs(0, 0);
            get.visitEnd();
        }
        cw.visitEnd();
        return cw.toByteArray();
    }
}
