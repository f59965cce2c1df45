package dev.ncclguard.bridge.natives;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.jna.Pointer;
import dev.ncclguard.bootstrap.state.HookState;
import dev.ncclguard.catalog.Status;
import dev.ncclguard.config.Bindings;
import dev.ncclguard.track.HandleView;
import dev.ncclguard.track.Snapshot;
import dev.ncclguard.track.Tracker;
import java.lang.reflect.Method;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * What the tracker learns from the hot calls through the real wrappers, hooks and native bridge:
 * a record marks its event pending on its stream and enqueues work there, a query that answers
 * cudaErrorNotReady changes nothing, one that succeeds completes the event (and the work up to its
 * record), a stream synchronize covers the work before it, an all-reduce leaves work pending on its
 * stream. It passes on the slots path (Tracker.enter/exit with CallArgs) and the carried-record path alike. The renamed natives
 * are stubbed: one copy of each class answers success, another cudaErrorNotReady.
 */
class NativeWrapperTrackingTest {
    private static final String PREFIX = "$$test$$";
    private static final long COMM = 0x7f00_3000_0000L;
    private static final long STREAM = 0x7f00_2000_0000L;
    private static final long EVENT = 0x7f00_1000_0000L;

    private final Tracker tracker = new Tracker(new Tracker.Config(false, System::currentTimeMillis));
    private final NativeBridge bridge = new NativeBridge(tracker, PREFIX);

    @AfterEach
    void unplug() {
        HookState.natives = null;
    }

    /** The fixture wrapped once, loaded twice: natives answering 0, and answering {@code result}. */
    private Class<?>[] wrapped(Class<?> fixture, int result) throws Exception {
        byte[] bytes = new NativeMethodTransformer(bridge, Bindings.none(), PREFIX, true)
                .transform(null, fixture.getName().replace('.', '/'), null, null, NativeFixtures.bytesOf(fixture));
        Class<?>[] copies = {StubbedNatives.load(fixture, bytes, PREFIX, 0),
            StubbedNatives.load(fixture, bytes, PREFIX, result)};
        HookState.natives = bridge;
        return copies;
    }

    /** Calls the static method {@code name} whose parameters take {@code args} (primitives from their boxes). */
    private static Object call(Class<?> c, String name, Object... args) throws Exception {
        for (Method m : c.getDeclaredMethods()) {
            if (m.getName().equals(name) && takes(m.getParameterTypes(), args)) {
                m.setAccessible(true);
                return m.invoke(null, args);
            }
        }
        throw new AssertionError("no " + name + " in " + c);
    }

    private static boolean takes(Class<?>[] types, Object[] args) {
        if (types.length != args.length) {
            return false;
        }
        for (int i = 0; i < types.length; i++) {
            Class<?> t = types[i];
            boolean fits = t == long.class ? args[i] instanceof Long
                    : t == int.class ? args[i] instanceof Integer
                    : !t.isPrimitive() && (args[i] == null || t.isInstance(args[i]));
            if (!fits) {
                return false;
            }
        }
        return true;
    }

    private Map<Long, Object> pendingOps() {
        Map<Long, Object> out = new TreeMap<>();
        for (HandleView v : tracker.snapshot().streams()) {
            out.put(v.handle(), v.details().get("pendingOps"));
        }
        return out;
    }

    private List<Long> pendingEvents() {
        return tracker.snapshot().events().stream().map(HandleView::handle).toList();
    }

    @Test
    void jniRecordMakesItsEventPendingOnItsStreamAndOnlyASuccessfulQueryCompletesIt() throws Exception {
        Class<?>[] c = wrapped(NativeFixtures.HotCalls.class, Status.CUDA_ERROR_NOT_READY);
        Class<?> ok = c[0];
        Class<?> notReady = c[1];
        assertEquals(0, call(ok, "create", COMM, STREAM, EVENT));
        assertEquals(List.of(), pendingEvents());

        assertEquals(0, call(ok, "cudaEventRecord", EVENT, STREAM));
        assertEquals(List.of(EVENT), pendingEvents(), "a recorded event is pending until seen complete");
        Snapshot s = tracker.snapshot();
        assertEquals(STREAM, s.events().get(0).recordedOn(), "recorded on its stream");
        assertEquals(1L, ((Number) pendingOps().get(STREAM)).longValue(), "the record is work on its stream");

        assertEquals(Status.CUDA_ERROR_NOT_READY, call(notReady, "cudaEventQuery", EVENT));
        assertEquals(List.of(EVENT), pendingEvents(), "cudaErrorNotReady: still pending");
        assertEquals(0, call(ok, "cudaEventQuery", EVENT));
        assertEquals(List.of(), pendingEvents(), "a successful query completes it");

        assertEquals(0, call(ok, "ncclAllReduce", 0x1000L, 0x2000L, 256L, 7, 0, COMM, STREAM));
        assertEquals(0, call(ok, "cudaEventRecord", EVENT, STREAM));
        assertEquals(2L, ((Number) pendingOps().get(STREAM)).longValue(), "an all-reduce and a record enqueued");
        assertEquals(0, call(ok, "cudaStreamSynchronize", STREAM));
        assertTrue(pendingOps().isEmpty(), "a synchronize covers the stream's work: " + pendingOps());
        assertEquals(List.of(EVENT), pendingEvents(), "the event still (SPEC: only its own query or synchronize)");
        assertEquals(0, call(ok, "cudaEventSynchronize", EVENT));
        assertEquals(List.of(), pendingEvents());
        assertEquals(0, tracker.snapshot().internalErrors());
    }

    @Test
    void jnaDirectPointerTypeHandlesAreReadForTheTracker() throws Exception {
        Class<?> creations = wrapped(NativeFixtures.HotCalls.class, 0)[0];
        Class<?>[] c = wrapped(NativeFixtures.PointerTypeCalls.class, Status.CUDA_ERROR_NOT_READY);
        assertEquals(0, call(creations, "create", COMM, STREAM, EVENT));
        NativeFixtures.Handle event = new NativeFixtures.Handle(EVENT);
        NativeFixtures.Handle stream = new NativeFixtures.Handle(STREAM);

        assertEquals(0, call(c[0], "cudaEventRecord", event, stream));
        assertEquals(List.of(EVENT), pendingEvents());
        assertEquals(STREAM, tracker.snapshot().events().get(0).recordedOn());
        assertEquals(Status.CUDA_ERROR_NOT_READY, call(c[1], "cudaEventQuery", event));
        assertEquals(List.of(EVENT), pendingEvents());
        assertEquals(0, call(c[0], "cudaEventQuery", event));
        assertEquals(List.of(), pendingEvents());
        assertEquals(0, call(c[0], "ncclAllReduce", new Pointer(0x1000), new Pointer(0x1000), 256L, 7, 0,
                new NativeFixtures.Handle(COMM), stream));
        assertEquals(1L, ((Number) pendingOps().get(STREAM)).longValue(),
                "the all-reduce; the record was covered when its event was seen complete");
        assertEquals(0, call(c[0], "cudaEventRecord", null, null), "null handles are read as 0");
        assertEquals(0, tracker.snapshot().internalErrors());
    }
}
