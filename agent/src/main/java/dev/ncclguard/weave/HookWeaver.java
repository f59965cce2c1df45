package dev.ncclguard.weave;

import java.lang.reflect.Method;

/**
 * Weaves calls to {@code dev.ncclguard.bootstrap.Hooks} into the few JDK and JNA methods the agent
 * watches. The woven code has no branches and the hooks never throw, so the application's code
 * paths and results stay as they were.
 *
 * <p>With {@link ClassEdit}, not ASM, on the usual path: ASM's thirty-odd classes cost some 30 ms
 * to load at JVM start, and re-encoding JNA's Function with it as much again. The JDK methods get
 * a call at their entry, in place (they are also retransformed when already loaded). JNA's Function,
 * as it loads, gets its {@code invoke} renamed to {@link #RENAMED_INVOKE} and a new {@code invoke}
 * that calls the hooks around it. When ClassEdit refuses a class, or Function is already loaded
 * without that method (at an attach), {@link AsmHookWeaver} weaves in place instead.
 */
public final class HookWeaver {
    public static final String HOOKS = "dev/ncclguard/bootstrap/Hooks";
    public static final String JNA_FUNCTION = "com/sun/jna/Function";
    public static final String SHUTDOWN = "java/lang/Shutdown";
    public static final String THREAD_GROUP = "java/lang/ThreadGroup";
    public static final String APP_SHUTDOWN_HOOKS = "java/lang/ApplicationShutdownHooks";
    /** Where every use of FFM starts (Java 22+): their static methods install the FFM bridge on first use. */
    public static final String SYMBOL_LOOKUP = "java/lang/foreign/SymbolLookup";
    public static final String LINKER = "java/lang/foreign/Linker";

    /** The method where interface-mapped and raw Function calls of every JNA 5.x meet. */
    public static final String INVOKE_DESC = "(Ljava/lang/reflect/Method;[Ljava/lang/Class;Ljava/lang/Class;"
            + "[Ljava/lang/Object;Ljava/util/Map;)Ljava/lang/Object;";
    /** JNA's own invoke, renamed; the one that keeps the name calls the hooks around it. */
    public static final String RENAMED_INVOKE = "$$ncclguard$$invoke";

    private static final int ILOAD_0 = 0x1a;
    private static final int ALOAD = 0x19;
    private static final int ALOAD_0 = 0x2a;
    private static final int ALOAD_1 = 0x2b;
    private static final int ALOAD_2 = 0x2c;
    private static final int ALOAD_3 = 0x2d;
    private static final int ASTORE = 0x3a;
    private static final int ASTORE_0 = 0x4b;
    private static final int LLOAD = 0x16;
    private static final int LSTORE = 0x37;
    private static final int ACONST_NULL = 0x01;
    private static final int GETFIELD = 0xb4;
    private static final int INVOKESPECIAL = 0xb7;
    private static final int INVOKESTATIC = 0xb8;
    private static final int ARETURN = 0xb0;

    private HookWeaver() {
    }

    /**
     * The rewritten class, or null when the class has not the expected shape (then it is left
     * alone). {@code redefined} is the class when it is retransformed, null when it loads.
     */
    public static byte[] weave(String className, byte[] classfile, Class<?> redefined) {
        // Function loaded before the agent (an attach) has no room for a new method: in place, with ASM
        boolean woveAtLoad = redefined != null && className.equals(JNA_FUNCTION) && hasRenamedInvoke(redefined);
        if (redefined == null || woveAtLoad || !className.equals(JNA_FUNCTION)) {
            try {
                return edit(className, classfile);
            } catch (ClassEdit.Unsupported e) {
                if (woveAtLoad) {
                    return null; // cannot happen: these are the bytes ClassEdit took at load
                }
            }
        }
        return AsmHookWeaver.weave(className, classfile);
    }

    /** With ClassEdit; null when the class has not the expected shape. */
    private static byte[] edit(String className, byte[] classfile) throws ClassEdit.Unsupported {
        switch (className) {
            case SHUTDOWN:
                // static exit(int status): Hooks.exiting(status)
                return atEntry(classfile, "exit", "(I)V", "exiting", "(I)V", ILOAD_0, -1);
            case THREAD_GROUP:
                // uncaughtException(Thread t, Throwable e): Hooks.uncaught(t)
                return atEntry(classfile, "uncaughtException", "(Ljava/lang/Thread;Ljava/lang/Throwable;)V",
                        "uncaught", "(Ljava/lang/Thread;)V", ALOAD_1, -1);
            case APP_SHUTDOWN_HOOKS:
                // static add(Thread hook): hook = Hooks.shutdownHookToAdd(hook)
                return atEntry(classfile, "add", "(Ljava/lang/Thread;)V", "shutdownHookToAdd",
                        "(Ljava/lang/Thread;)Ljava/lang/Thread;", ALOAD_0, ASTORE_0);
            case JNA_FUNCTION:
                return jnaFunction(classfile);
            case SYMBOL_LOOKUP:
            case LINKER:
                return ffmFirstUse(classfile);
            default:
                return null;
        }
    }

    /** Hooks.ffmFirstUse() at the entry of every static method but the class initializer. */
    private static byte[] ffmFirstUse(byte[] classfile) throws ClassEdit.Unsupported {
        ClassEdit edit = new ClassEdit(classfile);
        int ref = 0;
        for (int m = 0; m < edit.methodCount(); m++) {
            int access = edit.methodAccess(m);
            if ((access & ClassEdit.ACC_STATIC) == 0 || (access & (ClassEdit.ACC_NATIVE | ClassEdit.ACC_ABSTRACT)) != 0
                    || edit.methodName(m).equals("<clinit>")) {
                continue;
            }
            if (ref == 0) {
                ref = edit.methodRef(HOOKS, "ffmFirstUse", "()V");
            }
            edit.prefixCode(m, new byte[] {(byte) INVOKESTATIC, (byte) (ref >>> 8), (byte) ref}, 0);
        }
        return ref == 0 ? null : edit.toByteArray();
    }

    /**
     * Puts {@code Hooks.hook(<load>)} at the entry of one method, with the result stored back when
     * {@code store} is not -1. Null when the class has no such method.
     */
    private static byte[] atEntry(byte[] classfile, String name, String desc, String hook, String hookDesc,
            int load, int store) throws ClassEdit.Unsupported {
        ClassEdit edit = new ClassEdit(classfile);
        int m = edit.method(name, desc);
        if (m < 0) {
            return null;
        }
        int ref = edit.methodRef(HOOKS, hook, hookDesc);
        byte[] code = store < 0
                ? new byte[] {(byte) load, (byte) INVOKESTATIC, (byte) (ref >>> 8), (byte) ref}
                : new byte[] {(byte) load, (byte) INVOKESTATIC, (byte) (ref >>> 8), (byte) ref, (byte) store};
        edit.prefixCode(m, code, 1);
        return edit.toByteArray();
    }

    /**
     * Function.invoke(Method, Class[], Class, Object[], Map) becomes private {@link #RENAMED_INVOKE},
     * and a new public invoke does what the in-place weave does:
     * <pre>
     * Object fn = Hooks.jnaLookup(this.functionName);
     * Object found = Hooks.jnaFind(fn, inArgs);     // the record the call acts on, looked up once
     * long token = Hooks.jnaEnter(fn, found, inArgs);
     * return Hooks.jnaExit(RENAMED_INVOKE(...), fn, found, this.library, inArgs, token);
     * </pre>
     * It has no branch and no handler (a call that throws is not seen on exit, as before), so it
     * needs no stack map frames. Null when Function has not the JNA 5.x shape.
     */
    private static byte[] jnaFunction(byte[] classfile) throws ClassEdit.Unsupported {
        ClassEdit edit = new ClassEdit(classfile);
        int m = edit.method("invoke", INVOKE_DESC);
        if (m < 0 || (edit.methodAccess(m) & ClassEdit.ACC_STATIC) != 0
                || !edit.hasField("functionName", "Ljava/lang/String;")
                || edit.method(RENAMED_INVOKE, INVOKE_DESC) >= 0) {
            return null;
        }
        boolean hasLibrary = edit.hasField("library", "Lcom/sun/jna/NativeLibrary;");
        int access = edit.methodAccess(m);
        int functionName = edit.fieldRef("functionName", "Ljava/lang/String;");
        int library = hasLibrary ? edit.fieldRef("library", "Lcom/sun/jna/NativeLibrary;") : 0;
        int lookup = edit.methodRef(HOOKS, "jnaLookup", "(Ljava/lang/String;)Ljava/lang/Object;");
        int find = edit.methodRef(HOOKS, "jnaFind", "(Ljava/lang/Object;[Ljava/lang/Object;)Ljava/lang/Object;");
        int enter = edit.methodRef(HOOKS, "jnaEnter", "(Ljava/lang/Object;Ljava/lang/Object;[Ljava/lang/Object;)J");
        int exit = edit.methodRef(HOOKS, "jnaExit",
                "(Ljava/lang/Object;Ljava/lang/Object;Ljava/lang/Object;Ljava/lang/Object;[Ljava/lang/Object;J)"
                        + "Ljava/lang/Object;");
        int renamed = edit.methodRef(null, RENAMED_INVOKE, INVOKE_DESC);
        int name = edit.nameIndex(m);
        int desc = edit.descIndex(m);
        edit.rename(m, RENAMED_INVOKE, (access & ~(ClassEdit.ACC_PUBLIC | ClassEdit.ACC_PROTECTED))
                | ClassEdit.ACC_PRIVATE | ClassEdit.ACC_SYNTHETIC);
        // locals: 0 this, 1-5 the arguments, 6 fn, 7 found, 8-9 token
        Code c = new Code();
        c.op(ALOAD_0).ref(GETFIELD, functionName).ref(INVOKESTATIC, lookup).op(ASTORE, 6);
        c.op(ALOAD, 6).op(ALOAD, 4).ref(INVOKESTATIC, find).op(ASTORE, 7);
        c.op(ALOAD, 6).op(ALOAD, 7).op(ALOAD, 4).ref(INVOKESTATIC, enter).op(LSTORE, 8);
        c.op(ALOAD_0).op(ALOAD_1).op(ALOAD_2).op(ALOAD_3).op(ALOAD, 4).op(ALOAD, 5).ref(INVOKESPECIAL, renamed);
        c.op(ALOAD, 6).op(ALOAD, 7);
        if (hasLibrary) {
            c.op(ALOAD_0).ref(GETFIELD, library);
        } else {
            c.op(ACONST_NULL);
        }
        c.op(ALOAD, 4).op(LLOAD, 8).ref(INVOKESTATIC, exit).op(ARETURN);
        edit.addMethod(access, name, desc, 7, 10, c.bytes());
        return edit.toByteArray();
    }

    /** Whether a loaded Function was woven at its load (its invoke renamed): a retransformation must do the same. */
    private static boolean hasRenamedInvoke(Class<?> function) {
        try {
            for (Method method : function.getDeclaredMethods()) {
                if (method.getName().equals(RENAMED_INVOKE)) {
                    return true;
                }
            }
        } catch (LinkageError | RuntimeException e) {
            // its methods cannot be listed: treat it as not woven
        }
        return false;
    }

    /** Bytecode, a few instructions long. */
    private static final class Code {
        private byte[] bytes = new byte[64];
        private int length;

        Code op(int opcode) {
            put(opcode);
            return this;
        }

        Code op(int opcode, int localIndex) {
            put(opcode);
            put(localIndex);
            return this;
        }

        Code ref(int opcode, int constant) {
            put(opcode);
            put(constant >>> 8);
            put(constant);
            return this;
        }

        private void put(int b) {
            if (length == bytes.length) {
                bytes = java.util.Arrays.copyOf(bytes, length * 2);
            }
            bytes[length++] = (byte) b;
        }

        byte[] bytes() {
            return java.util.Arrays.copyOf(bytes, length);
        }
    }
}
