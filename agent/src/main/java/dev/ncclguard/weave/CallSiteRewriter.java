package dev.ncclguard.weave;

import java.util.Map;
import java.util.function.IntFunction;
import net.bytebuddy.jar.asm.ClassReader;
import net.bytebuddy.jar.asm.ClassVisitor;
import net.bytebuddy.jar.asm.ClassWriter;
import net.bytebuddy.jar.asm.MethodVisitor;
import net.bytebuddy.jar.asm.Opcodes;
import net.bytebuddy.jar.asm.Type;

/**
 * After an attach, reaches the native methods of classes loaded before it (which cannot gain the
 * wrapper {@link NativeWrapper} adds: a loaded class cannot get new methods) through their call
 * sites: in every class that calls one, the invoke is surrounded, inline, by the wrapper's own hook
 * calls ({@link NativeWrapper#callEnter}, {@link NativeWrapper#callExit}):
 * <pre>
 *   token = Hooks.nativeEnter(site, slots);
 *   result = the same invoke, on the same arguments;
 *   Hooks.nativeExit(site, slots, result as long, receiver, token);
 * </pre>
 * or, for a call tracked on its handles alone, the carried-record hooks (Hooks.nativeFind,
 * nativeToken, nativeExitFound) with the record in one more local.
 * The arguments are parked in new locals above the method's own. The inserted code has no branch
 * and the hooks never throw, so no stack map frame changes; what the native throws passes as
 * before.
 */
public final class CallSiteRewriter {
    private CallSiteRewriter() {
    }

    /** Told how many call sites a class had rewritten. */
    public interface Counter {
        void rewrote(int count);
    }

    /** The class with its calls of the sites' methods rewritten, or null when it has none. */
    /**
     * @param sites "owner.name(desc)" (owner internal) of each native method to reach, to its site
     * @param slots the arguments each site hands over
     */
    public static byte[] rewrite(byte[] classfile, Map<String, Integer> sites, IntFunction<Slots> slots,
            Counter counter) {
        ClassReader reader = new ClassReader(classfile);
        Map<String, Integer> maxLocals = maxLocals(reader);
        ClassWriter writer = new ClassWriter(reader, ClassWriter.COMPUTE_MAXS);
        int[] count = new int[1];
        reader.accept(new ClassVisitor(Opcodes.ASM9, writer) {
            @Override
            public MethodVisitor visitMethod(int access, String name, String desc, String signature, String[] exceptions) {
                MethodVisitor mv = super.visitMethod(access, name, desc, signature, exceptions);
                Integer locals = maxLocals.get(name + desc);
                return locals == null ? mv : new Sites(mv, sites, slots, locals, count);
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
        private final IntFunction<Slots> slots;
        private final int firstFree;
        private final int[] count;

        Sites(MethodVisitor mv, Map<String, Integer> sites, IntFunction<Slots> slots, int firstFree, int[] count) {
            super(Opcodes.ASM9, mv);
            this.sites = sites;
            this.slots = slots;
            this.firstFree = firstFree;
            this.count = count;
        }

        @Override
        public void visitMethodInsn(int opcode, String owner, String name, String desc, boolean isInterface) {
            Integer id = opcode == Opcodes.INVOKEINTERFACE || opcode == Opcodes.INVOKEDYNAMIC ? null
                    : sites.get(owner + "." + name + desc);
            if (id == null) {
                super.visitMethodInsn(opcode, owner, name, desc, isInterface);
                return;
            }
            int site = id;
            Slots slots = this.slots.apply(site);
            count[0]++;
            boolean isStatic = opcode == Opcodes.INVOKESTATIC;
            Type[] params = Type.getArgumentTypes(desc);
            Type ret = Type.getReturnType(desc);
            // park the arguments (and the receiver) in new locals
            int[] paramLocals = new int[params.length];
            int next = firstFree;
            int receiver = -1;
            if (!isStatic) {
                receiver = next++;
            }
            for (int i = 0; i < params.length; i++) {
                paramLocals[i] = next;
                next += params[i].getSize();
            }
            int tokenLocal = next;
            next += 2;
            int foundLocal = slots.carried() ? next++ : -1;
            int resultLocal = next;
            for (int i = params.length - 1; i >= 0; i--) {
                mv.visitVarInsn(params[i].getOpcode(Opcodes.ISTORE), paramLocals[i]);
            }
            if (!isStatic) {
                mv.visitVarInsn(Opcodes.ASTORE, receiver);
            }
            if (foundLocal >= 0) {
                NativeWrapper.callFind(mv, site, slots, params, paramLocals);
                mv.visitVarInsn(Opcodes.ASTORE, foundLocal);
                NativeWrapper.callToken(mv, site, foundLocal);
            } else {
                NativeWrapper.callEnter(mv, site, slots, params, paramLocals);
            }
            mv.visitVarInsn(Opcodes.LSTORE, tokenLocal);
            // the application's own call, unchanged
            if (!isStatic) {
                mv.visitVarInsn(Opcodes.ALOAD, receiver);
            }
            for (int i = 0; i < params.length; i++) {
                mv.visitVarInsn(params[i].getOpcode(Opcodes.ILOAD), paramLocals[i]);
            }
            super.visitMethodInsn(opcode, owner, name, desc, isInterface);
            if (ret.getSort() != Type.VOID) {
                mv.visitVarInsn(ret.getOpcode(Opcodes.ISTORE), resultLocal);
            }
            if (foundLocal >= 0) {
                NativeWrapper.callExitFound(mv, site, slots, params, paramLocals, ret, resultLocal, receiver,
                        tokenLocal, foundLocal);
            } else {
                NativeWrapper.callExit(mv, site, slots, params, paramLocals, ret, resultLocal, receiver,
                        tokenLocal);
            }
            if (ret.getSort() != Type.VOID) {
                mv.visitVarInsn(ret.getOpcode(Opcodes.ILOAD), resultLocal);
            }
        }
    }
}
