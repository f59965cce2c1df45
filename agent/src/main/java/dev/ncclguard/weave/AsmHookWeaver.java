package dev.ncclguard.weave;

import java.util.ArrayList;
import java.util.List;
import net.bytebuddy.jar.asm.ClassReader;
import net.bytebuddy.jar.asm.ClassVisitor;
import net.bytebuddy.jar.asm.ClassWriter;
import net.bytebuddy.jar.asm.FieldVisitor;
import net.bytebuddy.jar.asm.MethodVisitor;
import net.bytebuddy.jar.asm.Opcodes;

/**
 * The hooks of {@link HookWeaver} woven in place with plain ASM (the copy inside Byte Buddy), for
 * what {@link ClassEdit} cannot do: JNA's Function when it is already loaded (at an attach, where
 * no method may be added), and any class whose shape ClassEdit refuses. Only this class links
 * ASM, so the usual start-up path loads none of it.
 */
final class AsmHookWeaver {
    private static final String HOOKS = HookWeaver.HOOKS;
    private static final String JNA_FUNCTION = HookWeaver.JNA_FUNCTION;
    private static final String SHUTDOWN = HookWeaver.SHUTDOWN;
    private static final String THREAD_GROUP = HookWeaver.THREAD_GROUP;
    private static final String APP_SHUTDOWN_HOOKS = HookWeaver.APP_SHUTDOWN_HOOKS;
    private static final String INVOKE_DESC = HookWeaver.INVOKE_DESC;
    private static final int INVOKE_ARGS_LOCAL = 4;

    private AsmHookWeaver() {
    }

    /** The rewritten class, or null when the class has not the expected shape (then it is left alone). */
    static byte[] weave(String className, byte[] classfile) {
        switch (className) {
            case SHUTDOWN:
                return atEntry(classfile, "exit", "(I)V", mv -> {
                    mv.visitVarInsn(Opcodes.ILOAD, 0);
                    mv.visitMethodInsn(Opcodes.INVOKESTATIC, HOOKS, "exiting", "(I)V", false);
                });
            case THREAD_GROUP:
                return atEntry(classfile, "uncaughtException", "(Ljava/lang/Thread;Ljava/lang/Throwable;)V", mv -> {
                    mv.visitVarInsn(Opcodes.ALOAD, 1);
                    mv.visitMethodInsn(Opcodes.INVOKESTATIC, HOOKS, "uncaught", "(Ljava/lang/Thread;)V", false);
                });
            case APP_SHUTDOWN_HOOKS:
                // static add(Thread hook): hook = Hooks.shutdownHookToAdd(hook)
                return atEntry(classfile, "add", "(Ljava/lang/Thread;)V", mv -> {
                    mv.visitVarInsn(Opcodes.ALOAD, 0);
                    mv.visitMethodInsn(Opcodes.INVOKESTATIC, HOOKS, "shutdownHookToAdd",
                            "(Ljava/lang/Thread;)Ljava/lang/Thread;", false);
                    mv.visitVarInsn(Opcodes.ASTORE, 0);
                });
            case JNA_FUNCTION:
                return jnaFunction(classfile);
            default:
                return null;
        }
    }

    private interface Code {
        void emit(MethodVisitor mv);
    }

    /** Inserts {@code code} at the entry of one method; it uses no locals and no branches. */
    private static byte[] atEntry(byte[] classfile, String name, String desc, Code code) {
        ClassReader reader = new ClassReader(classfile);
        ClassWriter writer = new ClassWriter(reader, ClassWriter.COMPUTE_MAXS);
        boolean[] found = new boolean[1];
        reader.accept(new ClassVisitor(Opcodes.ASM9, writer) {
            @Override
            public MethodVisitor visitMethod(int access, String n, String d, String signature, String[] exceptions) {
                MethodVisitor mv = super.visitMethod(access, n, d, signature, exceptions);
                if (!n.equals(name) || !d.equals(desc)) {
                    return mv;
                }
                found[0] = true;
                return new MethodVisitor(Opcodes.ASM9, mv) {
                    @Override
                    public void visitCode() {
                        super.visitCode();
                        code.emit(mv);
                    }
                };
            }
        }, 0);
        return found[0] ? writer.toByteArray() : null;
    }

    /**
     * Function.invoke(Method, Class[], Class, Object[], Map): on entry
     * {@code fn = Hooks.jnaLookup(functionName); found = Hooks.jnaFind(fn, inArgs);
     * token = Hooks.jnaEnter(fn, found, inArgs);}, and before each return
     * {@code result = Hooks.jnaExit(result, fn, found, library, inArgs, token)}. {@code found}
     * carries the record a call acts on from entry to return, so that it is looked up once. The
     * new locals sit above the method's own, and every stack map frame is widened to carry them.
     */
    private static byte[] jnaFunction(byte[] classfile) {
        ClassReader reader = new ClassReader(classfile);
        Shape shape = Shape.of(reader);
        if (shape.invokeMaxLocals < 0 || !shape.fields.contains("functionName:Ljava/lang/String;")) {
            return null;
        }
        boolean hasLibrary = shape.fields.contains("library:Lcom/sun/jna/NativeLibrary;");
        int fnLocal = shape.invokeMaxLocals;
        int foundLocal = fnLocal + 1;
        int tokenLocal = fnLocal + 2;
        ClassWriter writer = new ClassWriter(reader, ClassWriter.COMPUTE_MAXS);
        reader.accept(new ClassVisitor(Opcodes.ASM9, writer) {
            @Override
            public MethodVisitor visitMethod(int access, String n, String d, String signature, String[] exceptions) {
                MethodVisitor mv = super.visitMethod(access, n, d, signature, exceptions);
                if (!n.equals("invoke") || !d.equals(INVOKE_DESC) || (access & Opcodes.ACC_STATIC) != 0) {
                    return mv;
                }
                return new MethodVisitor(Opcodes.ASM9, mv) {
                    @Override
                    public void visitCode() {
                        super.visitCode();
                        mv.visitVarInsn(Opcodes.ALOAD, 0);
                        mv.visitFieldInsn(Opcodes.GETFIELD, JNA_FUNCTION, "functionName", "Ljava/lang/String;");
                        mv.visitMethodInsn(Opcodes.INVOKESTATIC, HOOKS, "jnaLookup",
                                "(Ljava/lang/String;)Ljava/lang/Object;", false);
                        mv.visitVarInsn(Opcodes.ASTORE, fnLocal);
                        mv.visitVarInsn(Opcodes.ALOAD, fnLocal);
                        mv.visitVarInsn(Opcodes.ALOAD, INVOKE_ARGS_LOCAL);
                        mv.visitMethodInsn(Opcodes.INVOKESTATIC, HOOKS, "jnaFind",
                                "(Ljava/lang/Object;[Ljava/lang/Object;)Ljava/lang/Object;", false);
                        mv.visitVarInsn(Opcodes.ASTORE, foundLocal);
                        mv.visitVarInsn(Opcodes.ALOAD, fnLocal);
                        mv.visitVarInsn(Opcodes.ALOAD, foundLocal);
                        mv.visitVarInsn(Opcodes.ALOAD, INVOKE_ARGS_LOCAL);
                        mv.visitMethodInsn(Opcodes.INVOKESTATIC, HOOKS, "jnaEnter",
                                "(Ljava/lang/Object;Ljava/lang/Object;[Ljava/lang/Object;)J", false);
                        mv.visitVarInsn(Opcodes.LSTORE, tokenLocal);
                    }

                    @Override
                    public void visitInsn(int opcode) {
                        if (opcode == Opcodes.ARETURN) {
                            mv.visitVarInsn(Opcodes.ALOAD, fnLocal);
                            mv.visitVarInsn(Opcodes.ALOAD, foundLocal);
                            if (hasLibrary) {
                                mv.visitVarInsn(Opcodes.ALOAD, 0);
                                mv.visitFieldInsn(Opcodes.GETFIELD, JNA_FUNCTION, "library", "Lcom/sun/jna/NativeLibrary;");
                            } else {
                                mv.visitInsn(Opcodes.ACONST_NULL);
                            }
                            mv.visitVarInsn(Opcodes.ALOAD, INVOKE_ARGS_LOCAL);
                            mv.visitVarInsn(Opcodes.LLOAD, tokenLocal);
                            mv.visitMethodInsn(Opcodes.INVOKESTATIC, HOOKS, "jnaExit",
                                    "(Ljava/lang/Object;Ljava/lang/Object;Ljava/lang/Object;Ljava/lang/Object;[Ljava/lang/Object;J)"
                                            + "Ljava/lang/Object;",
                                    false);
                        }
                        super.visitInsn(opcode);
                    }

                    @Override
                    public void visitFrame(int type, int numLocal, Object[] local, int numStack, Object[] stack) {
                        // EXPAND_FRAMES: every frame is F_NEW with all its locals; add ours above them
                        List<Object> locals = new ArrayList<>(numLocal + 4);
                        int slot = 0;
                        for (int i = 0; i < numLocal; i++) {
                            locals.add(local[i]);
                            slot += local[i] == Opcodes.LONG || local[i] == Opcodes.DOUBLE ? 2 : 1;
                        }
                        for (; slot < fnLocal; slot++) {
                            locals.add(Opcodes.TOP);
                        }
                        locals.add("java/lang/Object");
                        locals.add("java/lang/Object");
                        locals.add(Opcodes.LONG);
                        super.visitFrame(type, locals.size(), locals.toArray(), numStack, stack);
                    }
                };
            }
        }, ClassReader.EXPAND_FRAMES);
        return writer.toByteArray();
    }

    /** What the first pass learns: the fields, and how many locals invoke(...) uses. */
    private static final class Shape {
        final List<String> fields = new ArrayList<>();
        int invokeMaxLocals = -1;

        static Shape of(ClassReader reader) {
            Shape shape = new Shape();
            reader.accept(new ClassVisitor(Opcodes.ASM9) {
                @Override
                public FieldVisitor visitField(int access, String name, String desc, String signature, Object value) {
                    shape.fields.add(name + ":" + desc);
                    return null;
                }

                @Override
                public MethodVisitor visitMethod(int access, String name, String desc, String signature, String[] exceptions) {
                    if (!name.equals("invoke") || !desc.equals(INVOKE_DESC) || (access & Opcodes.ACC_STATIC) != 0) {
                        return null;
                    }
                    return new MethodVisitor(Opcodes.ASM9) {
                        @Override
                        public void visitMaxs(int maxStack, int maxLocals) {
                            shape.invokeMaxLocals = maxLocals;
                        }
                    };
                }
            }, ClassReader.SKIP_DEBUG | ClassReader.SKIP_FRAMES);
            return shape;
        }
    }
}
