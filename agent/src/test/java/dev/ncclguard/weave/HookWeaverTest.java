package dev.ncclguard.weave;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ncclguard.bootstrap.state.HookState;
import dev.ncclguard.bootstrap.state.JnaSink;
import java.io.InputStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import net.bytebuddy.jar.asm.ClassReader;
import net.bytebuddy.jar.asm.ClassVisitor;
import net.bytebuddy.jar.asm.MethodVisitor;
import net.bytebuddy.jar.asm.Opcodes;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The hooks woven without ASM: JNA's Function as it loads, and the JDK methods at their entry. */
class HookWeaverTest {
    private final List<String> seen = new ArrayList<>();
    private final Object fn = new Object();
    private final Object found = new Object();

    @AfterEach
    void unplug() {
        HookState.jna = null;
    }

    private Class<?> wovenFunction() throws Exception {
        byte[] woven = HookWeaver.weave(HookWeaver.JNA_FUNCTION, ClassEditTest.bytesOf(FakeFunction.class), null);
        assertNotNull(woven, "not woven");
        HookState.jna = new JnaSink() {
            @Override
            public Object lookup(String symbol) {
                seen.add("lookup " + symbol);
                return fn;
            }

            @Override
            public Object find(Object f, Object[] args) {
                seen.add("find " + (f == fn) + " " + args.length);
                return found;
            }

            @Override
            public long enter(Object f, Object fd, Object[] args) {
                seen.add("enter " + (f == fn) + " " + (fd == found) + " " + args.length);
                return 42L;
            }

            @Override
            public void exit(Object f, Object fd, Object library, Object[] args, Object result, long token) {
                seen.add("exit " + (f == fn) + " " + (fd == found) + " " + library + " " + args.length + " " + result
                        + " " + token);
            }
        };
        return new ClassEditTest.Loader().define(FakeFunction.class.getName(), woven);
    }

    private static Method invoke(Class<?> function) throws NoSuchMethodException {
        return function.getMethod("invoke", Method.class, Class[].class, Class.class, Object[].class, Map.class);
    }

    @Test
    void functionInvokeCallsTheHooksAroundJnasOwnAndReturnsItsResult() throws Exception {
        Class<?> woven = wovenFunction();
        Object result = invoke(woven).invoke(woven.getConstructor().newInstance(), null, null, null,
                new Object[] {1, 2}, null);
        assertEquals("ran with 2", result);
        assertEquals(List.of("lookup cudaEventQuery", "find true 2", "enter true true 2",
                "exit true true null 2 ran with 2 42"), seen);
    }

    @Test
    void whatJnasInvokeThrowsReachesTheCallerAndNoExitIsSeen() throws Exception {
        Class<?> woven = wovenFunction();
        InvocationTargetException thrown = assertThrows(InvocationTargetException.class, () ->
                invoke(woven).invoke(woven.getConstructor().newInstance(), null, null, null, null, null));
        assertEquals("no arguments", thrown.getCause().getMessage());
        assertEquals(List.of("lookup cudaEventQuery"), seen.subList(0, 1));
        assertTrue(seen.stream().noneMatch(s -> s.startsWith("exit")), seen.toString());
    }

    @Test
    void jnasInvokeIsKeptPrivateUnderTheRenamedName() throws Exception {
        Class<?> woven = wovenFunction();
        Method renamed = woven.getDeclaredMethod(HookWeaver.RENAMED_INVOKE, Method.class, Class[].class, Class.class,
                Object[].class, Map.class);
        assertTrue(Modifier.isPrivate(renamed.getModifiers()));
        assertTrue(Modifier.isPublic(invoke(woven).getModifiers()));
    }

    @Test
    void aFunctionWovenAtLoadIsWovenTheSameWayWhenRetransformed() throws Exception {
        Class<?> woven = wovenFunction();
        byte[] again = HookWeaver.weave(HookWeaver.JNA_FUNCTION, ClassEditTest.bytesOf(FakeFunction.class), woven);
        assertNotNull(again);
        assertEquals(List.of(HookWeaver.RENAMED_INVOKE, "invoke"), methodsNamedInvoke(again));
    }

    @Test
    void aClassWithoutJnasShapeIsLeftAlone() throws Exception {
        assertNull(HookWeaver.weave(HookWeaver.JNA_FUNCTION, ClassEditTest.bytesOf(ClassEditFixture.class), null));
    }

    @Test
    void theJdkMethodsGetTheirHookAsTheirFirstInstructions() throws Exception {
        assertSame(Opcodes.ILOAD, firstOpcode(HookWeaver.SHUTDOWN, "exit", "(I)V"));
        assertEquals("exiting", firstCall(HookWeaver.SHUTDOWN, "exit", "(I)V"));
        assertEquals("uncaught", firstCall(HookWeaver.THREAD_GROUP, "uncaughtException",
                "(Ljava/lang/Thread;Ljava/lang/Throwable;)V"));
        assertEquals("shutdownHookToAdd", firstCall(HookWeaver.APP_SHUTDOWN_HOOKS, "add", "(Ljava/lang/Thread;)V"));
    }

    private static byte[] jdkClass(String internalName) throws Exception {
        try (InputStream in = Object.class.getResourceAsStream("/" + internalName + ".class")) {
            return in.readAllBytes();
        }
    }

    private static List<Object[]> firstInstructions(String className, String method, String desc) throws Exception {
        byte[] woven = HookWeaver.weave(className, jdkClass(className), null);
        assertNotNull(woven, className);
        List<Object[]> found = new ArrayList<>();
        new ClassReader(woven).accept(new ClassVisitor(Opcodes.ASM9) {
            @Override
            public MethodVisitor visitMethod(int access, String name, String d, String signature, String[] exceptions) {
                if (!name.equals(method) || !d.equals(desc)) {
                    return null;
                }
                return new MethodVisitor(Opcodes.ASM9) {
                    @Override
                    public void visitVarInsn(int opcode, int var) {
                        found.add(new Object[] {opcode, null});
                    }

                    @Override
                    public void visitMethodInsn(int opcode, String owner, String name, String d, boolean itf) {
                        found.add(new Object[] {opcode, owner + "." + name});
                    }
                };
            }
        }, 0);
        return found;
    }

    private static Integer firstOpcode(String className, String method, String desc) throws Exception {
        return (Integer) firstInstructions(className, method, desc).get(0)[0];
    }

    private static String firstCall(String className, String method, String desc) throws Exception {
        for (Object[] insn : firstInstructions(className, method, desc)) {
            if (insn[1] != null) {
                String call = (String) insn[1];
                assertTrue(call.startsWith(HookWeaver.HOOKS + "."), call);
                return call.substring(call.indexOf('.') + 1);
            }
        }
        return null;
    }

    private static List<String> methodsNamedInvoke(byte[] classfile) {
        List<String> names = new ArrayList<>();
        new ClassReader(classfile).accept(new ClassVisitor(Opcodes.ASM9) {
            @Override
            public MethodVisitor visitMethod(int access, String name, String d, String signature, String[] exceptions) {
                if (name.contains("invoke")) {
                    names.add(name);
                }
                return null;
            }
        }, 0);
        return names;
    }
}
