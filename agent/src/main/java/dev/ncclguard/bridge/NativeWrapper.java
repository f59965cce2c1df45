package dev.ncclguard.bridge;

import java.util.ArrayList;
import java.util.List;
import net.bytebuddy.jar.asm.ClassVisitor;
import net.bytebuddy.jar.asm.Label;
import net.bytebuddy.jar.asm.MethodVisitor;
import net.bytebuddy.jar.asm.Opcodes;
import net.bytebuddy.jar.asm.Type;

/**
 * Renames chosen native methods of a class to {@code prefix + name} and adds, under each original
 * name, a Java method that calls the renamed native between {@code Hooks.nativeEnter} and
 * {@code Hooks.nativeExit}. The JVM binds the renamed native to the original symbol through the
 * native method prefix (Instrumentation.setNativeMethodPrefix). The wrapper returns what the native
 * returned and lets what it throws pass untouched; a failure inside the hooks is swallowed.
 *
 * <p>The wrapper's arguments array holds the arguments (boxed), then the reference the native
 * returned, then the receiver of an instance method: {@code [a0 .. an-1, result, this]}.
 */
final class NativeWrapper extends ClassVisitor {
    private static final String HOOKS = "dev/ncclguard/bootstrap/Hooks";
    private static final String OBJECT_ARRAY = "[Ljava/lang/Object;";

    /** Chooses the site of a native method; -1 leaves it alone. */
    interface Sites {
        int siteFor(int access, String name, String descriptor);
    }

    private record Wrap(int access, String name, String descriptor, String signature, String[] exceptions,
                        int site, boolean boxArgs) {
    }

    private final String prefix;
    private final Sites sites;
    /** Sites whose wrapper passes no arguments: the install-time self-check on a JDK method. */
    private final java.util.function.IntPredicate argumentless;
    private final List<Wrap> wraps = new ArrayList<>();
    private String className;
    private int version;

    NativeWrapper(ClassVisitor next, String prefix, Sites sites, java.util.function.IntPredicate argumentless) {
        super(Opcodes.ASM9, next);
        this.prefix = prefix;
        this.sites = sites;
        this.argumentless = argumentless;
    }

    /** Whether any method was wrapped; valid once the class has been visited. */
    boolean wrappedAny() {
        return !wraps.isEmpty();
    }

    @Override
    public void visit(int version, int access, String name, String signature, String superName, String[] interfaces) {
        this.version = version;
        this.className = name;
        super.visit(version, access, name, signature, superName, interfaces);
    }

    @Override
    public MethodVisitor visitMethod(int access, String name, String descriptor, String signature, String[] exceptions) {
        if ((access & Opcodes.ACC_NATIVE) != 0 && !name.startsWith(prefix)) {
            int site = sites.siteFor(access, name, descriptor);
            if (site >= 0) {
                wraps.add(new Wrap(access, name, descriptor, signature, exceptions, site, !argumentless.test(site)));
                return super.visitMethod(access, prefix + name, descriptor, signature, exceptions);
            }
        }
        return super.visitMethod(access, name, descriptor, signature, exceptions);
    }

    @Override
    public void visitEnd() {
        for (Wrap w : wraps) {
            writeWrapper(w);
        }
        super.visitEnd();
    }

    private void writeWrapper(Wrap w) {
        boolean isStatic = (w.access & Opcodes.ACC_STATIC) != 0;
        int access = w.access & ~(Opcodes.ACC_NATIVE | Opcodes.ACC_SYNCHRONIZED);
        MethodVisitor mv = super.visitMethod(access, w.name, w.descriptor, w.signature, w.exceptions);
        if (mv == null) {
            return;
        }
        Type[] params = Type.getArgumentTypes(w.descriptor);
        Type ret = Type.getReturnType(w.descriptor);
        boolean frames = (version & 0xFFFF) >= Opcodes.V1_6;

        List<Object> locals = new ArrayList<>();
        int slot = 0;
        if (!isStatic) {
            locals.add(className);
            slot++;
        }
        int paramSlots = 0;
        for (Type t : params) {
            locals.add(frameType(t));
            paramSlots += t.getSize();
        }
        slot += paramSlots;
        int argsLocal = slot;
        int tokenLocal = argsLocal + 1;
        int resultLocal = tokenLocal + 2;
        int refSlot = params.length; // where a returned reference goes in the arguments array

        mv.visitCode();
        // the arguments array: [a0 .. an-1, result, this]
        if (w.boxArgs) {
            push(mv, params.length + 2);
            mv.visitTypeInsn(Opcodes.ANEWARRAY, "java/lang/Object");
            int local = isStatic ? 0 : 1;
            for (int i = 0; i < params.length; i++) {
                mv.visitInsn(Opcodes.DUP);
                push(mv, i);
                mv.visitVarInsn(params[i].getOpcode(Opcodes.ILOAD), local);
                box(mv, params[i]);
                mv.visitInsn(Opcodes.AASTORE);
                local += params[i].getSize();
            }
            if (!isStatic) {
                mv.visitInsn(Opcodes.DUP);
                push(mv, params.length + 1);
                mv.visitVarInsn(Opcodes.ALOAD, 0);
                mv.visitInsn(Opcodes.AASTORE);
            }
        } else {
            mv.visitInsn(Opcodes.ACONST_NULL);
        }
        mv.visitVarInsn(Opcodes.ASTORE, argsLocal);
        List<Object> withArgs = new ArrayList<>(locals);
        withArgs.add(OBJECT_ARRAY);
        List<Object> withToken = new ArrayList<>(withArgs);
        withToken.add(Opcodes.LONG);

        // long token = Hooks.nativeEnter(site, args), 0 if that throws
        Label enterStart = new Label();
        Label enterEnd = new Label();
        Label enterFailed = new Label();
        Label entered = new Label();
        mv.visitTryCatchBlock(enterStart, enterEnd, enterFailed, "java/lang/Throwable");
        mv.visitLabel(enterStart);
        push(mv, w.site);
        mv.visitVarInsn(Opcodes.ALOAD, argsLocal);
        mv.visitMethodInsn(Opcodes.INVOKESTATIC, HOOKS, "nativeEnter", "(I[Ljava/lang/Object;)J", false);
        mv.visitVarInsn(Opcodes.LSTORE, tokenLocal);
        mv.visitLabel(enterEnd);
        mv.visitJumpInsn(Opcodes.GOTO, entered);
        mv.visitLabel(enterFailed);
        if (frames) {
            mv.visitFrame(Opcodes.F_FULL, withArgs.size(), withArgs.toArray(), 1, new Object[] {"java/lang/Throwable"});
        }
        mv.visitInsn(Opcodes.POP);
        mv.visitInsn(Opcodes.LCONST_0);
        mv.visitVarInsn(Opcodes.LSTORE, tokenLocal);
        mv.visitLabel(entered);
        if (frames) {
            mv.visitFrame(Opcodes.F_FULL, withToken.size(), withToken.toArray(), 0, new Object[0]);
        }

        // the renamed native, with the same arguments; what it throws leaves the wrapper as is
        int local = 0;
        if (!isStatic) {
            mv.visitVarInsn(Opcodes.ALOAD, 0);
            local = 1;
        }
        for (Type t : params) {
            mv.visitVarInsn(t.getOpcode(Opcodes.ILOAD), local);
            local += t.getSize();
        }
        mv.visitMethodInsn(isStatic ? Opcodes.INVOKESTATIC : Opcodes.INVOKESPECIAL, className,
                prefix + w.name, w.descriptor, false);
        List<Object> withResult = new ArrayList<>(withToken);
        if (ret.getSort() != Type.VOID) {
            mv.visitVarInsn(ret.getOpcode(Opcodes.ISTORE), resultLocal);
            withResult.add(frameType(ret));
        }
        boolean reference = ret.getSort() == Type.OBJECT || ret.getSort() == Type.ARRAY;
        if (reference && w.boxArgs) {
            mv.visitVarInsn(Opcodes.ALOAD, argsLocal);
            push(mv, refSlot);
            mv.visitVarInsn(Opcodes.ALOAD, resultLocal);
            mv.visitInsn(Opcodes.AASTORE);
        }

        // Hooks.nativeExit(site, args, result as long, token); a throw there is swallowed
        Label exitStart = new Label();
        Label exitEnd = new Label();
        Label exitFailed = new Label();
        Label done = new Label();
        mv.visitTryCatchBlock(exitStart, exitEnd, exitFailed, "java/lang/Throwable");
        mv.visitLabel(exitStart);
        push(mv, w.site);
        mv.visitVarInsn(Opcodes.ALOAD, argsLocal);
        switch (ret.getSort()) {
            case Type.BOOLEAN, Type.BYTE, Type.CHAR, Type.SHORT, Type.INT -> {
                mv.visitVarInsn(Opcodes.ILOAD, resultLocal);
                mv.visitInsn(Opcodes.I2L);
            }
            case Type.LONG -> mv.visitVarInsn(Opcodes.LLOAD, resultLocal);
            default -> mv.visitInsn(Opcodes.LCONST_0);
        }
        mv.visitVarInsn(Opcodes.LLOAD, tokenLocal);
        mv.visitMethodInsn(Opcodes.INVOKESTATIC, HOOKS, "nativeExit", "(I[Ljava/lang/Object;JJ)V", false);
        mv.visitLabel(exitEnd);
        mv.visitJumpInsn(Opcodes.GOTO, done);
        mv.visitLabel(exitFailed);
        if (frames) {
            mv.visitFrame(Opcodes.F_FULL, withResult.size(), withResult.toArray(), 1, new Object[] {"java/lang/Throwable"});
        }
        mv.visitInsn(Opcodes.POP);
        mv.visitLabel(done);
        if (frames) {
            mv.visitFrame(Opcodes.F_FULL, withResult.size(), withResult.toArray(), 0, new Object[0]);
        }
        if (ret.getSort() != Type.VOID) {
            mv.visitVarInsn(ret.getOpcode(Opcodes.ILOAD), resultLocal);
        }
        mv.visitInsn(ret.getOpcode(Opcodes.IRETURN));

        int maxStack = Math.max(8, paramSlots + 1);
        int maxLocals = resultLocal + Math.max(ret.getSize(), 0);
        mv.visitMaxs(maxStack, maxLocals);
        mv.visitEnd();
    }

    private static Object frameType(Type t) {
        switch (t.getSort()) {
            case Type.BOOLEAN: case Type.BYTE: case Type.CHAR: case Type.SHORT: case Type.INT:
                return Opcodes.INTEGER;
            case Type.FLOAT:
                return Opcodes.FLOAT;
            case Type.LONG:
                return Opcodes.LONG;
            case Type.DOUBLE:
                return Opcodes.DOUBLE;
            default:
                return t.getInternalName();
        }
    }

    /** Pushes an int constant with the shortest instruction; also used by CallSiteRewriter. */
    static void push(MethodVisitor mv, int value) {
        if (value >= -1 && value <= 5) {
            mv.visitInsn(Opcodes.ICONST_0 + value);
        } else if (value >= Byte.MIN_VALUE && value <= Byte.MAX_VALUE) {
            mv.visitIntInsn(Opcodes.BIPUSH, value);
        } else if (value >= Short.MIN_VALUE && value <= Short.MAX_VALUE) {
            mv.visitIntInsn(Opcodes.SIPUSH, value);
        } else {
            mv.visitLdcInsn(value);
        }
    }

    /** Boxes the primitive on the stack (nothing for references); also used by CallSiteRewriter. */
    static void box(MethodVisitor mv, Type t) {
        String owner;
        switch (t.getSort()) {
            case Type.BOOLEAN -> owner = "java/lang/Boolean";
            case Type.BYTE -> owner = "java/lang/Byte";
            case Type.CHAR -> owner = "java/lang/Character";
            case Type.SHORT -> owner = "java/lang/Short";
            case Type.INT -> owner = "java/lang/Integer";
            case Type.FLOAT -> owner = "java/lang/Float";
            case Type.LONG -> owner = "java/lang/Long";
            case Type.DOUBLE -> owner = "java/lang/Double";
            default -> {
                return;
            }
        }
        mv.visitMethodInsn(Opcodes.INVOKESTATIC, owner, "valueOf", "(" + t.getDescriptor() + ")L" + owner + ";", false);
    }
}
