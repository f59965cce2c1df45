package dev.ncclguard.weave;

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
 * <p>The wrapper hands the hooks only the arguments the site's function reads, in the slots of
 * {@link dev.ncclguard.bootstrap.state.NativeSink}: numbers as longs, references as they are, so a call
 * allocates nothing. A call the tracker follows on its handle and stream alone (record, query,
 * synchronize, collectives) goes instead through {@code Hooks.nativeFind}, {@code nativeToken} and
 * {@code nativeExitFound} with those two slots, the record found before the call kept in a local
 * of the wrapper, as the JNA bridge's woven code keeps it: no per-thread state. {@link CallSiteRewriter}
 * emits the same hook calls through {@link #callEnter}, {@link #callExit} and their carried forms.
 */
public final class NativeWrapper extends ClassVisitor {
    private static final String HOOKS = "dev/ncclguard/bootstrap/Hooks";
    private static final String SLOT = "JLjava/lang/Object;";
    static final String ENTER = "(I" + SLOT.repeat(Slots.COUNT) + ")J";
    static final String EXIT = "(I" + SLOT.repeat(Slots.COUNT) + "JLjava/lang/Object;J)V";
    static final String FIND = "(I" + SLOT + SLOT + ")Ljava/lang/Object;";
    static final String TOKEN = "(ILjava/lang/Object;)J";
    static final String EXIT_FOUND = "(ILjava/lang/Object;" + SLOT + SLOT + "JLjava/lang/Object;J)V";

    /** Chooses the site of a native method; -1 leaves it alone. */
    public interface Sites {
        int siteFor(int access, String name, String descriptor);
    }

    private record Wrap(int access, String name, String descriptor, String signature, String[] exceptions,
                        int site, Slots slots) {
    }

    private final String prefix;
    private final Sites sites;
    /** The arguments each site hands over (Slots.NONE for the install-time self-check). */
    private final java.util.function.IntFunction<Slots> slots;
    private final List<Wrap> wraps = new ArrayList<>();
    private String className;
    private int version;

    public NativeWrapper(ClassVisitor next, String prefix, Sites sites, java.util.function.IntFunction<Slots> slots) {
        super(Opcodes.ASM9, next);
        this.prefix = prefix;
        this.sites = sites;
        this.slots = slots;
    }

    /** Whether any method was wrapped; valid once the class has been visited. */
    public boolean wrappedAny() {
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
                wraps.add(new Wrap(access, name, descriptor, signature, exceptions, site, slots.apply(site)));
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
        int[] paramLocals = new int[params.length];
        int paramSlots = 0;
        for (int i = 0; i < params.length; i++) {
            locals.add(frameType(params[i]));
            paramLocals[i] = slot;
            slot += params[i].getSize();
            paramSlots += params[i].getSize();
        }
        boolean carried = w.slots.carried();
        int tokenLocal = slot;
        int foundLocal = carried ? tokenLocal + 2 : -1;
        int resultLocal = tokenLocal + (carried ? 3 : 2);
        List<Object> withToken = new ArrayList<>(locals);
        withToken.add(Opcodes.LONG);
        if (carried) {
            withToken.add("java/lang/Object");
        }

        mv.visitCode();
        // long token = Hooks.nativeEnter(site, slots), 0 if that throws; or, for a call tracked on
        // its handles, Object found = Hooks.nativeFind(site, handle, stream) and
        // long token = Hooks.nativeToken(site, found), null and 0 if that throws
        Label enterStart = new Label();
        Label enterEnd = new Label();
        Label enterFailed = new Label();
        Label entered = new Label();
        mv.visitTryCatchBlock(enterStart, enterEnd, enterFailed, "java/lang/Throwable");
        mv.visitLabel(enterStart);
        if (carried) {
            callFind(mv, w.site, w.slots, params, paramLocals);
            mv.visitVarInsn(Opcodes.ASTORE, foundLocal);
            callToken(mv, w.site, foundLocal);
        } else {
            callEnter(mv, w.site, w.slots, params, paramLocals);
        }
        mv.visitVarInsn(Opcodes.LSTORE, tokenLocal);
        mv.visitLabel(enterEnd);
        mv.visitJumpInsn(Opcodes.GOTO, entered);
        mv.visitLabel(enterFailed);
        if (frames) {
            mv.visitFrame(Opcodes.F_FULL, locals.size(), locals.toArray(), 1, new Object[] {"java/lang/Throwable"});
        }
        mv.visitInsn(Opcodes.POP);
        if (carried) {
            mv.visitInsn(Opcodes.ACONST_NULL);
            mv.visitVarInsn(Opcodes.ASTORE, foundLocal);
        }
        mv.visitInsn(Opcodes.LCONST_0);
        mv.visitVarInsn(Opcodes.LSTORE, tokenLocal);
        mv.visitLabel(entered);
        if (frames) {
            mv.visitFrame(Opcodes.F_FULL, withToken.size(), withToken.toArray(), 0, new Object[0]);
        }

        // the renamed native, with the same arguments; what it throws leaves the wrapper as is
        if (!isStatic) {
            mv.visitVarInsn(Opcodes.ALOAD, 0);
        }
        for (int i = 0; i < params.length; i++) {
            mv.visitVarInsn(params[i].getOpcode(Opcodes.ILOAD), paramLocals[i]);
        }
        mv.visitMethodInsn(isStatic ? Opcodes.INVOKESTATIC : Opcodes.INVOKESPECIAL, className,
                prefix + w.name, w.descriptor, false);
        List<Object> withResult = new ArrayList<>(withToken);
        if (ret.getSort() != Type.VOID) {
            mv.visitVarInsn(ret.getOpcode(Opcodes.ISTORE), resultLocal);
            withResult.add(frameType(ret));
        }

        // Hooks.nativeExit(site, slots, result as long, receiver, token); a throw there is swallowed
        Label exitStart = new Label();
        Label exitEnd = new Label();
        Label exitFailed = new Label();
        Label done = new Label();
        mv.visitTryCatchBlock(exitStart, exitEnd, exitFailed, "java/lang/Throwable");
        mv.visitLabel(exitStart);
        if (carried) {
            callExitFound(mv, w.site, w.slots, params, paramLocals, ret, resultLocal, isStatic ? -1 : 0, tokenLocal,
                    foundLocal);
        } else {
            callExit(mv, w.site, w.slots, params, paramLocals, ret, resultLocal, isStatic ? -1 : 0, tokenLocal);
        }
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

        // the exit call's operands: site, 5 slots of 3 words, result, receiver, token
        int maxStack = Math.max(1 + 3 * Slots.COUNT + 2 + 1 + 2, paramSlots + 1);
        int maxLocals = resultLocal + Math.max(ret.getSize(), 0);
        mv.visitMaxs(maxStack, maxLocals);
        mv.visitEnd();
    }

    /**
     * Emits {@code Hooks.nativeEnter(site, slots)}, leaving the long token on the stack; the
     * arguments are read from the locals {@code paramLocals} (Java argument index to local).
     */
    public static void callEnter(MethodVisitor mv, int site, Slots slots, Type[] params, int[] paramLocals) {
        push(mv, site);
        pushSlots(mv, slots, params, paramLocals);
        mv.visitMethodInsn(Opcodes.INVOKESTATIC, HOOKS, "nativeEnter", ENTER, false);
    }

    /**
     * Emits {@code Hooks.nativeExit(site, slots, result, receiver, token)}: the result is read from
     * {@code resultLocal} and widened to long (0 for void and references), the receiver from
     * {@code receiverLocal} (null if -1), the token from {@code tokenLocal}.
     */
    public static void callExit(MethodVisitor mv, int site, Slots slots, Type[] params, int[] paramLocals,
                         Type ret, int resultLocal, int receiverLocal, int tokenLocal) {
        push(mv, site);
        pushSlots(mv, slots, params, paramLocals);
        pushResultReceiverToken(mv, ret, resultLocal, receiverLocal, tokenLocal);
        mv.visitMethodInsn(Opcodes.INVOKESTATIC, HOOKS, "nativeExit", EXIT, false);
    }

    /**
     * For a site whose slots are {@code carried}: emits {@code Hooks.nativeFind(site, handle slot,
     * stream slot)}, leaving the record (an Object) on the stack.
     */
    public static void callFind(MethodVisitor mv, int site, Slots slots, Type[] params, int[] paramLocals) {
        push(mv, site);
        pushSlot(mv, slots, slots.handle(), params, paramLocals);
        pushSlot(mv, slots, slots.stream(), params, paramLocals);
        mv.visitMethodInsn(Opcodes.INVOKESTATIC, HOOKS, "nativeFind", FIND, false);
    }

    /** Emits {@code Hooks.nativeToken(site, found)}, the record read from {@code foundLocal}, leaving the long token. */
    public static void callToken(MethodVisitor mv, int site, int foundLocal) {
        push(mv, site);
        mv.visitVarInsn(Opcodes.ALOAD, foundLocal);
        mv.visitMethodInsn(Opcodes.INVOKESTATIC, HOOKS, "nativeToken", TOKEN, false);
    }

    /**
     * Emits {@code Hooks.nativeExitFound(site, found, handle slot, stream slot, result, receiver,
     * token)}, as {@link #callExit} does, the record read from {@code foundLocal}.
     */
    public static void callExitFound(MethodVisitor mv, int site, Slots slots, Type[] params, int[] paramLocals,
                              Type ret, int resultLocal, int receiverLocal, int tokenLocal, int foundLocal) {
        push(mv, site);
        mv.visitVarInsn(Opcodes.ALOAD, foundLocal);
        pushSlot(mv, slots, slots.handle(), params, paramLocals);
        pushSlot(mv, slots, slots.stream(), params, paramLocals);
        pushResultReceiverToken(mv, ret, resultLocal, receiverLocal, tokenLocal);
        mv.visitMethodInsn(Opcodes.INVOKESTATIC, HOOKS, "nativeExitFound", EXIT_FOUND, false);
    }

    private static void pushResultReceiverToken(MethodVisitor mv, Type ret, int resultLocal, int receiverLocal,
                                                int tokenLocal) {
        switch (ret.getSort()) {
            case Type.BOOLEAN, Type.BYTE, Type.CHAR, Type.SHORT, Type.INT -> {
                mv.visitVarInsn(Opcodes.ILOAD, resultLocal);
                mv.visitInsn(Opcodes.I2L);
            }
            case Type.LONG -> mv.visitVarInsn(Opcodes.LLOAD, resultLocal);
            default -> mv.visitInsn(Opcodes.LCONST_0);
        }
        if (receiverLocal >= 0) {
            mv.visitVarInsn(Opcodes.ALOAD, receiverLocal);
        } else {
            mv.visitInsn(Opcodes.ACONST_NULL);
        }
        mv.visitVarInsn(Opcodes.LLOAD, tokenLocal);
    }

    /**
     * Pushes the {@link Slots#COUNT} slots: (long, null) for a number or a JNA Pointer's
     * address, (0, reference), or (0, null).
     */
    private static void pushSlots(MethodVisitor mv, Slots slots, Type[] params, int[] paramLocals) {
        for (int k = 0; k < Slots.COUNT; k++) {
            pushSlot(mv, slots, k < slots.args().length ? k : -1, params, paramLocals);
        }
    }

    /** Pushes slot {@code k} of {@code slots} as a (long, Object) pair; (0, null) for -1. */
    private static void pushSlot(MethodVisitor mv, Slots slots, int k, Type[] params, int[] paramLocals) {
        int kind = k >= 0 ? slots.kinds()[k] : Slots.NOT_PASSED;
        int local = kind == Slots.NOT_PASSED ? -1 : paramLocals[slots.args()[k]];
        switch (kind) {
            case Slots.WORD -> {
                Type t = params[slots.args()[k]];
                mv.visitVarInsn(t.getOpcode(Opcodes.ILOAD), local);
                if (t.getSort() != Type.LONG) {
                    mv.visitInsn(Opcodes.I2L);
                }
                mv.visitInsn(Opcodes.ACONST_NULL);
            }
            case Slots.ADDRESS -> {
                // null-safe (0), and a field read once inlined; resolved in the method's own loader
                mv.visitVarInsn(Opcodes.ALOAD, local);
                mv.visitMethodInsn(Opcodes.INVOKESTATIC, "com/sun/jna/Pointer", "nativeValue",
                        "(Lcom/sun/jna/Pointer;)J", false);
                mv.visitInsn(Opcodes.ACONST_NULL);
            }
            case Slots.REFERENCE -> {
                mv.visitInsn(Opcodes.LCONST_0);
                mv.visitVarInsn(Opcodes.ALOAD, local);
            }
            default -> {
                mv.visitInsn(Opcodes.LCONST_0);
                mv.visitInsn(Opcodes.ACONST_NULL);
            }
        }
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

    /** Pushes an int constant with the shortest instruction. */
    private static void push(MethodVisitor mv, int value) {
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
}
