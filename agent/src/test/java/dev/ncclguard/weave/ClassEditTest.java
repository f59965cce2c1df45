package dev.ncclguard.weave;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.Method;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Code put at a method's entry by ClassEdit runs first, and the method runs as before: the edited
 * class is defined in a loader of its own, where the JVM verifies it.
 */
class ClassEditTest {
    private static final String FIXTURE = ClassEditFixture.class.getName();
    private static final String PROBE = "dev/ncclguard/weave/EditProbe";
    private static final int INVOKESTATIC = 0xb8;
    private static final int ILOAD_0 = 0x1a;

    @BeforeEach
    void reset() {
        EditProbe.hits = 0;
        EditProbe.lastInt = 0;
    }

    static byte[] bytesOf(Class<?> type) throws IOException {
        try (InputStream in = type.getResourceAsStream(type.getSimpleName() + ".class")) {
            return in.readAllBytes();
        }
    }

    /** Every static method and the instance one get EditProbe.hit() at their entry (3 bytes: padded). */
    private static Class<?> editedFixture() throws Exception {
        ClassEdit edit = new ClassEdit(bytesOf(ClassEditFixture.class));
        int hit = edit.methodRef(PROBE, "hit", "()V");
        for (int m = 0; m < edit.methodCount(); m++) {
            String name = edit.methodName(m);
            if (name.equals("<clinit>") || name.equals("<init>") || name.equals("annotatedLocal")) {
                continue;
            }
            edit.prefixCode(m, new byte[] {(byte) INVOKESTATIC, (byte) (hit >>> 8), (byte) hit}, 0);
        }
        return new Loader().define(FIXTURE, edit.toByteArray());
    }

    private static Object call(Class<?> type, String method, Class<?> param, Object arg) throws Exception {
        Method m = type.getMethod(method, param);
        return m.invoke(m.getParameterCount() > 0 && !java.lang.reflect.Modifier.isStatic(m.getModifiers())
                ? type.getConstructor().newInstance() : null, arg);
    }

    @Test
    void editedMethodsComputeWhatTheOriginalsDoAndCallTheProbeFirst() throws Exception {
        Class<?> edited = editedFixture();
        Object[][] cases = {
            {"loopFirst", int.class, new Object[] {5, 101, 1000}},
            {"tableSwitch", int.class, new Object[] {-1, 0, 2, 3, 4}},
            {"lookupSwitch", int.class, new Object[] {10, 1000, 100000, 7}},
            {"handler", String.class, new Object[] {"42", "x"}},
            {"longStart", long.class, new Object[] {3L, -3L}},
            {"longTry", String.class, new Object[] {"12", "nope"}},
            {"uninitialized", boolean.class, new Object[] {true, false}},
            {"finallyBlock", int.class, new Object[] {-5, 7}},
            {"instance", int.class, new Object[] {41}},
        };
        int calls = 0;
        for (Object[] c : cases) {
            for (Object arg : (Object[]) c[2]) {
                Object expected = call(ClassEditFixture.class, (String) c[0], (Class<?>) c[1], arg);
                int before = EditProbe.hits;
                Object actual = call(edited, (String) c[0], (Class<?>) c[1], arg);
                assertEquals(expected, actual, c[0] + "(" + arg + ")");
                assertEquals(before + 1, EditProbe.hits, c[0] + " did not call the probe once");
                calls++;
            }
        }
        assertEquals(calls, EditProbe.hits);
    }

    @Test
    void aLongPrefixTurnsCompactFirstFramesIntoExtendedOnes() throws Exception {
        // 21 calls, 63 bytes: every same_frame and same_locals_1_stack_item first frame moves past 63
        ClassEdit edit = new ClassEdit(bytesOf(ClassEditFixture.class));
        int hit = edit.methodRef(PROBE, "hit", "()V");
        byte[] code = new byte[63];
        for (int i = 0; i < code.length; i += 3) {
            code[i] = (byte) INVOKESTATIC;
            code[i + 1] = (byte) (hit >>> 8);
            code[i + 2] = (byte) hit;
        }
        for (String name : new String[] {"loopFirst", "handler", "uninitialized"}) {
            for (int m = 0; m < edit.methodCount(); m++) {
                if (edit.methodName(m).equals(name)) {
                    edit.prefixCode(m, code, 0);
                }
            }
        }
        Class<?> edited = new Loader().define(FIXTURE, edit.toByteArray());
        assertEquals(ClassEditFixture.loopFirst(1000), call(edited, "loopFirst", int.class, 1000));
        assertEquals(-1, call(edited, "handler", String.class, "x"));
        assertEquals("no!", call(edited, "uninitialized", boolean.class, false));
        assertEquals(3 * 21, EditProbe.hits);
    }

    @Test
    void codeOfExactlyFourBytesGetsNoPaddingAndSeesTheArguments() throws Exception {
        ClassEdit edit = new ClassEdit(bytesOf(ClassEditFixture.class));
        int seen = edit.methodRef(PROBE, "seen", "(I)V");
        int m = edit.method("tableSwitch", "(I)I");
        edit.prefixCode(m, new byte[] {(byte) ILOAD_0, (byte) INVOKESTATIC, (byte) (seen >>> 8), (byte) seen}, 1);
        Class<?> edited = new Loader().define(FIXTURE, edit.toByteArray());
        assertEquals(12, call(edited, "tableSwitch", int.class, 2));
        assertEquals(1, EditProbe.hits);
        assertEquals(2, EditProbe.lastInt);
    }

    @Test
    void aClassWithNoEditIsWrittenBackAsItWas() throws Exception {
        byte[] original = bytesOf(ClassEditFixture.class);
        assertArrayEquals(original, new ClassEdit(original).toByteArray());
    }

    @Test
    void aRenamedMethodKeepsItsCodeUnderItsNewName() throws Exception {
        ClassEdit edit = new ClassEdit(bytesOf(ClassEditFixture.class));
        edit.rename(edit.method("tableSwitch", "(I)I"), "renamedSwitch", ClassEdit.ACC_PUBLIC | ClassEdit.ACC_STATIC);
        Class<?> edited = new Loader().define(FIXTURE, edit.toByteArray());
        assertEquals(13, call(edited, "renamedSwitch", int.class, 3));
        assertThrows(NoSuchMethodException.class, () -> edited.getMethod("tableSwitch", int.class));
    }

    @Test
    void typeAnnotationsInCodeAreRefusedSinceTheirOffsetsWouldNotMove() throws Exception {
        ClassEdit edit = new ClassEdit(bytesOf(ClassEditFixture.class));
        int hit = edit.methodRef(PROBE, "hit", "()V");
        int m = edit.method("annotatedLocal", "(Ljava/lang/String;)I");
        ClassEdit.Unsupported refused = assertThrows(ClassEdit.Unsupported.class, () ->
                edit.prefixCode(m, new byte[] {(byte) INVOKESTATIC, (byte) (hit >>> 8), (byte) hit}, 0));
        assertTrue(refused.getMessage().contains("TypeAnnotations"), refused.getMessage());
    }

    @Test
    void whatIsNotAClassFileIsRefused() {
        assertThrows(ClassEdit.Unsupported.class, () -> new ClassEdit(new byte[] {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
        assertThrows(ClassEdit.Unsupported.class, () -> new ClassEdit(new byte[] {(byte) 0xCA, (byte) 0xFE,
            (byte) 0xBA, (byte) 0xBE, 0, 0, 0, 61, 0, 9, 1, 0}));
    }

    /** Defines a class under a name its parent also knows, so the edited copy is the one used. */
    static final class Loader extends ClassLoader {
        Loader() {
            super(ClassEditTest.class.getClassLoader());
        }

        Class<?> define(String name, byte[] bytes) {
            return defineClass(name, bytes, 0, bytes.length);
        }
    }
}
