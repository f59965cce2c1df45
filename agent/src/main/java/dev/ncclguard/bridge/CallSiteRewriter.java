package dev.ncclguard.bridge;

import dev.ncclguard.log.Log;
import java.lang.instrument.ClassFileTransformer;
import java.security.ProtectionDomain;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import net.bytebuddy.jar.asm.ClassReader;
import net.bytebuddy.jar.asm.ClassVisitor;
import net.bytebuddy.jar.asm.ClassWriter;
import net.bytebuddy.jar.asm.MethodVisitor;
import net.bytebuddy.jar.asm.Opcodes;
import net.bytebuddy.jar.asm.Type;

/**
 * After an attach, reaches the native methods of classes loaded before it (which cannot gain the
 * wrapper {@link NativeWrapper} adds: a loaded class cannot get new methods) through their call
 * sites: in every class that calls one, the invoke is surrounded, inline, by what the wrapper does:
 * <pre>
 *   args = new Object[] {a0 .. an-1, null, receiver}; token = Hooks.nativeEnter(site, args);
 *   result = the same invoke, on the same arguments;
 *   args[n] = result (a reference); Hooks.nativeExit(site, args, result as long, token);
 * </pre>
 * The arguments are parked in new locals above the method's own. The inserted code has no branch
 * and the hooks never throw, so no stack map frame changes; what the native throws passes as
 * before. Registered retransformable: it rewrites loaded callers, and callers loaded later.
 */
final class CallSiteRewriter implements ClassFileTransformer {
    private static final String HOOKS = "dev/ncclguard/bootstrap/Hooks";

    /** "owner.name(desc)" (owner internal) to the site of that native method. */
    private final Map<String, Integer> sites;
    private final ClassScan scan;
    /** Call sites rewritten, per internal class name; read by the attach command's answer. */
    final Map<String, Integer> rewritten = new ConcurrentHashMap<>();

    CallSiteRewriter(Map<String, Integer> sites, ClassScan scan) {
        this.sites = Map.copyOf(sites);
        this.scan = scan;
    }

    /** Whether {@code classfile} names one of the methods (a cheap filter before parsing). */
    boolean mayCall(byte[] classfile) {
        return scan.namesAny(classfile);
    }

    @Override
    public byte[] transform(ClassLoader loader, String className, Class<?> redefined,
                            ProtectionDomain domain, byte[] classfile) {
        if (className == null || classfile == null || loader == null || !mayCall(classfile)) {
            return null;
        }
        try {
            byte[] woven = rewrite(classfile, sites, count -> rewritten.merge(className, count, Integer::sum));
            return woven;
        } catch (Throwable t) {
            Log.warn("cannot rewrite the NCCL/CUDA calls in " + className.replace('/', '.')
                    + ", they run untracked: " + t);
            return null;
        }
    }

    /** Told how many call sites a class had rewritten. */
    interface Counter {
        void rewrote(int count);
    }

    /** The class with its calls of the sites' methods rewritten, or null when it has none. */
    static byte[] rewrite(byte[] classfile, Map<String, Integer> sites, Counter counter) {
        ClassReader reader = new ClassReader(classfile);
        Map<String, Integer> maxLocals = maxLocals(reader);
        ClassWriter writer = new ClassWriter(reader, ClassWriter.COMPUTE_MAXS);
        int[] count = new int[1];
        reader.accept(new ClassVisitor(Opcodes.ASM9, writer) {
            @Override
            public MethodVisitor visitMethod(int access, String name, String desc, String signature, String[] exceptions) {
                MethodVisitor mv = super.visitMethod(access, name, desc, signature, exceptions);
                Integer locals = maxLocals.get(name + desc);
                return locals == null ? mv : new Sites(mv, sites, locals, count);
            }
        }, 0);
        if (count[0] == 0) {
            return null;
        }
        counter.rewrote(count[0]);
        return writer.toByteArray();
    }

    /** How many locals each method with code uses, so that the parked arguments go above them. */
    private static Map<String, Integer> maxLocals(ClassReader reader) {
        Map<String, Integer> out = new java.util.HashMap<>();
        reader.accept(new ClassVisitor(Opcodes.ASM9) {
            @Override
            public MethodVisitor visitMethod(int access, String name, String desc, String signature, String[] exceptions) {
                return new MethodVisitor(Opcodes.ASM9) {
                    @Override
                    public void visitMaxs(int maxStack, int locals) {
                        out.put(name + desc, locals);
                    }
                };
            }
        }, ClassReader.SKIP_DEBUG | ClassReader.SKIP_FRAMES);
        return out;
    }

    /** Rewrites the invokes of site methods in one method body. */
    private static final class Sites extends MethodVisitor {
        private final Map<String, Integer> sites;
        private final int firstFree;
        private final int[] count;

        Sites(MethodVisitor mv, Map<String, Integer> sites, int firstFree, int[] count) {
            super(Opcodes.ASM9, mv);
            this.sites = sites;
            this.firstFree = firstFree;
            this.count = count;
        }

        @Override
        public void visitMethodInsn(int opcode, String owner, String name, String desc, boolean isInterface) {
            Integer site = opcode == Opcodes.INVOKEINTERFACE || opcode == Opcodes.INVOKEDYNAMIC ? null
                    : sites.get(owner + "." + name + desc);
            if (site == null) {
                super.visitMethodInsn(opcode, owner, name, desc, isInterface);
                return;
            }
            count[0]++;
            boolean isStatic = opcode == Opcodes.INVOKESTATIC;
            Type[] params = Type.getArgumentTypes(desc);
            Type ret = Type.getReturnType(desc);
            // park the arguments (and the receiver) in new locals
            int[] slots = new int[params.length];
            int next = firstFree;
            int receiver = -1;
            if (!isStatic) {
                receiver = next++;
            }
            for (int i = 0; i < params.length; i++) {
                slots[i] = next;
                next += params[i].getSize();
            }
            int argsLocal = next++;
            int tokenLocal = next;
            next += 2;
            int resultLocal = next;
            for (int i = params.length - 1; i >= 0; i--) {
                mv.visitVarInsn(params[i].getOpcode(Opcodes.ISTORE), slots[i]);
            }
            if (!isStatic) {
                mv.visitVarInsn(Opcodes.ASTORE, receiver);
            }
            // args = {a0 .. an-1, (result), receiver}
            NativeWrapper.push(mv, params.length + 2);
            mv.visitTypeInsn(Opcodes.ANEWARRAY, "java/lang/Object");
            for (int i = 0; i < params.length; i++) {
                mv.visitInsn(Opcodes.DUP);
                NativeWrapper.push(mv, i);
                mv.visitVarInsn(params[i].getOpcode(Opcodes.ILOAD), slots[i]);
                NativeWrapper.box(mv, params[i]);
                mv.visitInsn(Opcodes.AASTORE);
            }
            if (!isStatic) {
                mv.visitInsn(Opcodes.DUP);
                NativeWrapper.push(mv, params.length + 1);
                mv.visitVarInsn(Opcodes.ALOAD, receiver);
                mv.visitInsn(Opcodes.AASTORE);
            }
            mv.visitVarInsn(Opcodes.ASTORE, argsLocal);
            NativeWrapper.push(mv, site);
            mv.visitVarInsn(Opcodes.ALOAD, argsLocal);
            mv.visitMethodInsn(Opcodes.INVOKESTATIC, HOOKS, "nativeEnter", "(I[Ljava/lang/Object;)J", false);
            mv.visitVarInsn(Opcodes.LSTORE, tokenLocal);
            // the application's own call, unchanged
            if (!isStatic) {
                mv.visitVarInsn(Opcodes.ALOAD, receiver);
            }
            for (int i = 0; i < params.length; i++) {
                mv.visitVarInsn(params[i].getOpcode(Opcodes.ILOAD), slots[i]);
            }
            super.visitMethodInsn(opcode, owner, name, desc, isInterface);
            if (ret.getSort() != Type.VOID) {
                mv.visitVarInsn(ret.getOpcode(Opcodes.ISTORE), resultLocal);
            }
            if (ret.getSort() == Type.OBJECT || ret.getSort() == Type.ARRAY) {
                mv.visitVarInsn(Opcodes.ALOAD, argsLocal);
                NativeWrapper.push(mv, params.length);
                mv.visitVarInsn(Opcodes.ALOAD, resultLocal);
                mv.visitInsn(Opcodes.AASTORE);
            }
            NativeWrapper.push(mv, site);
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
            if (ret.getSort() != Type.VOID) {
                mv.visitVarInsn(ret.getOpcode(Opcodes.ILOAD), resultLocal);
            }
        }
    }
}
