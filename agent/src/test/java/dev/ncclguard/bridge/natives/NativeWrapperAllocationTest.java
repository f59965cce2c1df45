package dev.ncclguard.bridge.natives;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.jna.Pointer;
import dev.ncclguard.bootstrap.state.HookState;
import dev.ncclguard.config.Bindings;
import dev.ncclguard.track.HandleView;
import dev.ncclguard.track.Snapshot;
import dev.ncclguard.track.Tracker;
import java.lang.management.ManagementFactory;
import java.lang.reflect.Method;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The wrapped natives' hot calls (event record, query, synchronize; stream query, synchronize;
 * all-reduce; JNI, JNA direct with Pointer and with PointerType handles), through the real wrapper, hooks, bridge and tracker, allocate nothing: counted by
 * the JVM per thread (com.sun.management.ThreadMXBean) around many calls, as TrackerAllocationTest
 * does for the tracker alone. The renamed natives are stubbed with Java bodies answering success.
 */
class NativeWrapperAllocationTest {
    private static final String PREFIX = "$$test$$";
    private static final int CALLS = 100_000;
    /** What measuring itself may cost, far below one object per call. */
    private static final long SLACK_BYTES = 16 * 1024;
    private static final long COMM = 0x7f00_3000_0000L;
    private static final long STREAM = 0x7f00_2000_0000L;
    private static final long EVENT = 0x7f00_1000_0000L;
    /** The second set, for the JNA direct-mapped methods. */
    private static final long OTHER = 0x100;
    /** The third, for the PointerType handles. */
    private static final long TYPED = 0x200;

    private static final com.sun.management.ThreadMXBean THREADS =
            (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

    @AfterEach
    void unplug() {
        HookState.natives = null;
    }

    private static long allocated() {
        return THREADS.getThreadAllocatedBytes(Thread.currentThread().getId());
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

    @Test
    void hotCallsThroughJniAndJnaDirectWrappersAllocateNothing() throws Exception {
        assertTrue(THREADS.isThreadAllocatedMemorySupported() && THREADS.isThreadAllocatedMemoryEnabled(),
                "this JVM does not count allocated bytes per thread");
        Tracker tracker = new Tracker(new Tracker.Config(false, System::currentTimeMillis));
        NativeBridge bridge = new NativeBridge(tracker, PREFIX);
        Class<?> fixture = NativeFixtures.HotCalls.class;
        byte[] wrapped = new NativeMethodTransformer(bridge, Bindings.none(), PREFIX, true)
                .transform(null, fixture.getName().replace('.', '/'), null, null, NativeFixtures.bytesOf(fixture));
        Class<?> c = StubbedNatives.load(fixture, wrapped, PREFIX, 0);
        Class<?> typedFixture = NativeFixtures.PointerTypeCalls.class;
        Class<?> typed = StubbedNatives.load(typedFixture, new NativeMethodTransformer(bridge, Bindings.none(), PREFIX,
                true).transform(null, typedFixture.getName().replace('.', '/'), null, null,
                NativeFixtures.bytesOf(typedFixture)), PREFIX, 0);
        HookState.natives = bridge;
        Method create = method(c, "create");
        Method jni = method(c, "jni");
        Method jnaDirect = method(c, "jnaDirect");
        Method typedLoop = method(typed, "loop");
        assertEquals(0, create.invoke(null, COMM, STREAM, EVENT));
        assertEquals(0, create.invoke(null, COMM + OTHER, STREAM + OTHER, EVENT + OTHER));
        assertEquals(0, create.invoke(null, COMM + TYPED, STREAM + TYPED, EVENT + TYPED));
        Object[] jniArgs = {CALLS, COMM, STREAM, EVENT};
        Object[] jnaArgs = {CALLS, new Pointer(COMM + OTHER), new Pointer(STREAM + OTHER),
            new Pointer(EVENT + OTHER), new Pointer(0x1000)};
        Object[] typedArgs = {CALLS, new NativeFixtures.Handle(COMM + TYPED), new NativeFixtures.Handle(STREAM + TYPED),
            new NativeFixtures.Handle(EVENT + TYPED), new Pointer(0x1000)};

        for (int round = 0; round < 2; round++) { // the first round warms up (class loading, thread-locals)
            long before = allocated();
            assertEquals(0, jni.invoke(null, jniArgs));
            long jniBytes = allocated() - before;
            before = allocated();
            assertEquals(0, jnaDirect.invoke(null, jnaArgs));
            long jnaBytes = allocated() - before;
            before = allocated();
            assertEquals(0, typedLoop.invoke(null, typedArgs));
            long typedBytes = allocated() - before;
            if (round == 1) {
                System.out.printf("wrapped hot calls: JNI %d bytes for %d calls, JNA direct %d bytes for %d calls,"
                        + " JNA direct with PointerType handles %d bytes for %d calls%n",
                        jniBytes, 6L * CALLS, jnaBytes, 3L * CALLS, typedBytes, 3L * CALLS);
                assertTrue(typedBytes < SLACK_BYTES, typedBytes + " bytes allocated by " + 3 * CALLS
                        + " JNA direct calls with PointerType handles");
                assertTrue(jniBytes < SLACK_BYTES, jniBytes + " bytes allocated by " + 6 * CALLS + " JNI calls");
                assertTrue(jnaBytes < SLACK_BYTES, jnaBytes + " bytes allocated by " + 3 * CALLS + " JNA direct calls");
            }
        }
        // the calls reached the tracker with their handles: each stream has the last all-reduce pending
        Snapshot s = tracker.snapshot();
        Map<Long, Object> pending = new TreeMap<>();
        for (HandleView v : s.streams()) {
            pending.put(v.handle(), v.details().get("pendingOps"));
        }
        assertEquals(Map.of(STREAM, 1L, STREAM + OTHER, 1L, STREAM + TYPED, 1L), numbers(pending));
        assertEquals(0, s.events().size(), "every event's last record was seen complete");
    }

    private static Map<Long, Long> numbers(Map<Long, Object> m) {
        Map<Long, Long> out = new TreeMap<>();
        m.forEach((k, v) -> out.put(k, v instanceof Number n ? n.longValue() : -1L));
        return out;
    }
}
