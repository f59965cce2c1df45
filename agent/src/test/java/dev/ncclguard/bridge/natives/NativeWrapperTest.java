package dev.ncclguard.bridge.natives;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.jna.Pointer;
import dev.ncclguard.bootstrap.state.HookState;
import dev.ncclguard.config.Bindings;
import dev.ncclguard.track.Tracker;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Wraps the fixtures' native methods and loads the result in a fresh class loader. Their natives
 * are bound to nothing, so each call ends in UnsatisfiedLinkError: which shows that the class
 * verifies, that the wrapper calls the hooks first, and that what the native throws comes out as is.
 */
class NativeWrapperTest {
    private static final String PREFIX = "$$test$$";

    private final NativeBridge bridge = new NativeBridge(new Tracker(), PREFIX);
    private final RecordingSink sink = new RecordingSink();
    private final List<RecordingSink.Call> entered = sink.entered;
    private final List<RecordingSink.Call> exited = sink.exited;

    @AfterEach
    void unplug() {
        HookState.natives = null;
    }

    private byte[] wrappedBytes(Class<?> fixture, Bindings bindings) {
        String internal = fixture.getName().replace('.', '/');
        byte[] bytes = new NativeMethodTransformer(bridge, bindings, PREFIX, true)
                .transform(null, internal, null, null, NativeFixtures.bytesOf(fixture));
        assertNotNull(bytes, "no method wrapped in " + fixture);
        return bytes;
    }

    private Class<?> wrapped(Class<?> fixture, Bindings bindings) throws Exception {
        byte[] bytes = wrappedBytes(fixture, bindings);
        HookState.natives = sink;
        ClassLoader loader = new ClassLoader(getClass().getClassLoader()) {
            @Override
            protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
                if (name.equals(fixture.getName())) {
                    Class<?> c = findLoadedClass(name);
                    return c != null ? c : defineClass(name, bytes, 0, bytes.length);
                }
                return super.loadClass(name, resolve);
            }
        };
        return Class.forName(fixture.getName(), true, loader);
    }

    private static Method method(Class<?> c, String name) {
        for (Method m : c.getDeclaredMethods()) {
            if (m.getName().equals(name)) {
                m.setAccessible(true);
                return m;
            }
        }
        throw new AssertionError("no " + name + " in " + c);
    }

    private static Throwable thrownBy(Method m, Object receiver, Object... args) {
        InvocationTargetException e = assertThrows(InvocationTargetException.class, () -> m.invoke(receiver, args));
        return e.getCause();
    }

    @Test
    void catalogNamedNativesAreRenamedAndWrappedOthersAreLeftAlone() throws Exception {
        Class<?> c = wrapped(NativeFixtures.Jni.class, Bindings.none());
        for (String name : List.of("cudaEventQuery", "ncclCommInitRank", "cudaStreamSynchronize", "cudaSetDevice",
                "cudaEventCreate", "ncclGroupStart")) {
            assertFalse(Modifier.isNative(method(c, name).getModifiers()), name + " is now a Java method");
            Method renamed = method(c, PREFIX + name);
            assertTrue(Modifier.isNative(renamed.getModifiers()), name + " renamed");
            assertEquals(method(c, name).getModifiers() | Modifier.NATIVE, renamed.getModifiers());
        }
        assertTrue(Modifier.isNative(method(c, "somethingElse").getModifiers()));
        assertFalse(Modifier.isNative(method(c, "ncclCommDestroy").getModifiers()));
        assertThrows(AssertionError.class, () -> method(c, PREFIX + "somethingElse"));
    }

    @Test
    void wrapperHandsItsArgumentsToTheHooksThenLetsTheNativesThrowablePass() throws Exception {
        Class<?> c = wrapped(NativeFixtures.Jni.class, Bindings.none());
        long[] out = new long[1];
        byte[] id = new byte[128];
        Throwable thrown = thrownBy(method(c, "ncclCommInitRank"), null, out, 2, id, 1);
        assertSame(UnsatisfiedLinkError.class, thrown.getClass());
        assertTrue(thrown.getMessage().contains("ncclCommInitRank"), thrown.getMessage());
        assertEquals(1, entered.size());
        RecordingSink.Call in = entered.get(0);
        assertSame(out, in.ref(0));
        assertEquals(2, in.word(1));
        assertSame(id, in.ref(2));
        assertEquals(1, in.word(3));
        assertEquals(0, in.word(4));
        assertNull(in.ref(4));
        assertEquals(0, exited.size(), "no exit for a call that threw");
        NativeSite site = bridge.site(in.site());
        assertEquals("ncclCommInitRank", site.fn.symbol());
        assertEquals(NativeBridge.JNI, site.bridge);
        assertEquals(4, site.paramCount);
    }

    @Test
    void onlyTheArgumentsTheFunctionReadsArePassedIntegersWidenedToLong() throws Exception {
        Class<?> c = wrapped(NativeFixtures.Jni.class, Bindings.none());
        thrownBy(method(c, "ncclAllReduce"), null, 1L, 2L, 3L, 4, 5, 0x7f00_0000_1234L, -3);
        RecordingSink.Call in = entered.get(0);
        assertArrayEquals(new long[] {0x7f00_0000_1234L, -3L, 0, 0, 0}, in.words(), "comm and stream, sign-extended");
        assertArrayEquals(new Object[5], in.refs());
        assertTrue(in.carried(), "a collective is tracked on its handles: the carried-record hooks");
        thrownBy(method(c, "cudaStreamWaitEvent"), null, (short) -7, (byte) 9, 1);
        assertArrayEquals(new long[] {-7L, -7L, 0, 0, 0}, entered.get(1).words(),
                "the stream, as handle and stream; not the event or the flags");
        // cudaSetDevice's device is a double here: never a handle or a number the tracker reads
        thrownBy(method(c, "cudaSetDevice"), null, 1.5d, 7L, 2.5f, true, 'x', (short) 3, (byte) 4, new Object());
        assertArrayEquals(new long[5], entered.get(2).words());
        assertArrayEquals(new Object[5], entered.get(2).refs());
        assertFalse(entered.get(2).carried(), "cudaSetDevice reads its device: the slots hooks");
        thrownBy(method(c, "ncclGroupStart"), null);
        thrownBy(method(c, "cudaEventCreate"), null, new long[1]);
        assertEquals(5, entered.size());
    }

    @Test
    void aJnaPointerHandleByValueIsPassedAsItsAddressAnOutPointerAsItIs() throws Exception {
        Class<?> c = wrapped(NativeFixtures.Jni.class, Bindings.none());
        Pointer stream = new Pointer(0x5000);
        thrownBy(method(c, "cudaEventRecordWithFlags"), null, new Pointer(0xE000), stream, 0);
        assertArrayEquals(new long[] {0xE000, 0x5000, 0, 0, 0}, entered.get(0).words());
        assertArrayEquals(new Object[5], entered.get(0).refs());
        thrownBy(method(c, "cudaEventRecordWithFlags"), null, null, stream, 0);
        assertArrayEquals(new long[] {0, 0x5000, 0, 0, 0}, entered.get(1).words(), "a null Pointer is 0");
        Pointer out = new Pointer(0x7000);
        thrownBy(method(c, "cudaStreamCreate"), null, out);
        assertSame(out, entered.get(2).ref(0), "a creation writes its handle through it: read after the call");
        assertEquals(0, entered.get(2).word(0));
        assertFalse(entered.get(2).carried());
    }

    @Test
    void exitGetsTheResultWidenedTheReceiverAndEntersToken() throws Exception {
        Class<?> fixture = NativeFixtures.Jni.class;
        Class<?> c = StubbedNatives.load(fixture, wrappedBytes(fixture, Bindings.none()), PREFIX, -5);
        HookState.natives = sink;
        java.lang.reflect.Constructor<?> make = c.getDeclaredConstructor();
        make.setAccessible(true);
        Object receiver = make.newInstance();
        assertEquals(-5, method(c, "cudaStreamSynchronize").invoke(receiver, 9L), "the native's own result");
        RecordingSink.Call out = exited.get(0);
        assertEquals(9L, out.word(0));
        assertEquals(-5L, out.result());
        assertSame(receiver, out.receiver());
        assertEquals(RecordingSink.TOKEN, out.token());
        assertTrue(out.carried(), "a synchronize carries its record and token to the exit");
        assertEquals(-5L, method(c, "cudaSetDevice").invoke(null, 1.5d, 7L, 2.5f, true, 'x', (short) 3, (byte) 4,
                null));
        assertEquals(-5L, exited.get(1).result(), "a long result");
        assertNull(exited.get(1).receiver(), "a static method has none");
        assertNull(method(c, "cudaEventCreate").invoke(null, new long[1]));
        assertEquals(0L, exited.get(2).result(), "a reference result is handed over as 0");
        assertEquals(3, exited.size());
    }

    @Test
    void bindingsWrapMethodsOfOtherNames() throws Exception {
        Bindings bindings = Bindings.parse("b", List.of(
                NativeFixtures.Comms.class.getName() + "#createComm(I[BI)J = ncclCommInitRank handle=return nranks=0 uniqueId=1 rank=2",
                NativeFixtures.Comms.class.getName() + "#destroyComm = ncclCommDestroy handle=0"));
        Class<?> c = wrapped(NativeFixtures.Comms.class, bindings);
        assertFalse(Modifier.isNative(method(c, "createComm").getModifiers()));
        assertFalse(Modifier.isNative(method(c, "destroyComm").getModifiers()));
        thrownBy(method(c, "createComm"), null, 2, new byte[128], 0);
        NativeSite site = bridge.site(entered.get(0).site());
        assertEquals("ncclCommInitRank", site.fn.symbol());
        assertTrue(site.handleIsResult());
        assertArrayEquals(new int[] {0, 1, 2}, site.slots.args(), "nranks, uniqueId, rank; the handle is the result");
        assertEquals(0, site.status(0x1234L), "a handle returned means success");
        assertEquals(-1, site.status(0L), "no handle returned means failure");
    }

    @Test
    void aClassWithNothingToWrapIsReturnedUntouched() {
        NativeMethodTransformer t = new NativeMethodTransformer(bridge, Bindings.none(), PREFIX, true);
        assertNull(t.transform(null, "dev/ncclguard/bridge/natives/NativeFixtures$OtherNatives", null, null,
                NativeFixtures.bytesOf(NativeFixtures.OtherNatives.class)));
        assertNull(t.transform(null, "java/lang/String", null, null, NativeFixtures.bytesOf(String.class)));
    }
}
