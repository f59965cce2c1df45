package dev.ncclguard.bridge.jna;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import com.sun.jna.Pointer;
import com.sun.jna.ptr.PointerByReference;
import dev.ncclguard.bootstrap.Hooks;
import dev.ncclguard.bootstrap.state.HookState;
import dev.ncclguard.bridge.OwnCalls;
import dev.ncclguard.catalog.Status;
import dev.ncclguard.track.Tracker;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The JNA bridge as the code woven into Function.invoke drives it, on JNA's own argument objects. */
class JnaBridgeTest {
    private static final Integer SUCCESS = 0;
    private static final Integer NOT_READY = Status.CUDA_ERROR_NOT_READY;
    private final Tracker tracker = new Tracker();
    private final Pointer event = new Pointer(0xE000L);
    private final Pointer stream = new Pointer(0x5000L);

    @BeforeEach
    void install() {
        HookState.jna = new JnaBridge(tracker);
    }

    @AfterEach
    void uninstall() {
        HookState.jna = null;
    }

    /** As the woven code does it: a new String each time, as a JNA Function of its own would hold. */
    private static void call(String symbol, Object result, Object... args) {
        Object fn = Hooks.jnaLookup(new String(symbol));
        Object found = Hooks.jnaFind(fn, args);
        long token = Hooks.jnaEnter(fn, found, args);
        Hooks.jnaExit(result, fn, found, null, args, token);
    }

    private static PointerByReference out(long handle) {
        return new PointerByReference(new Pointer(handle));
    }

    private int pendingEvents() {
        return tracker.snapshot().events().size();
    }

    @Test
    void eventRecordedThenQueriedIsTrackedThroughTheHooks() {
        call("cudaStreamCreate", SUCCESS, out(0x5000L));
        call("cudaEventCreate", SUCCESS, out(0xE000L));
        call("cudaEventRecord", SUCCESS, event, stream);
        assertEquals(1, pendingEvents());
        call("cudaEventQuery", NOT_READY, event);
        assertEquals(1, pendingEvents());
        call("cudaEventQuery", SUCCESS, event);
        assertEquals(0, pendingEvents());
        assertEquals(0, tracker.snapshot().streams().size(), "the record covered all of the stream's work");
    }

    @Test
    void untrackedSymbolsFindNothing() {
        assertNull(Hooks.jnaLookup(new String("cudaGetDevice")));
        assertNull(Hooks.jnaFind(null, new Object[] {event}));
        assertEquals(0L, Hooks.jnaEnter(null, null, new Object[] {event}));
    }

    @Test
    void theAgentsOwnCallsAreIgnoredOnTheirThreadOnly() throws Exception {
        call("cudaStreamCreate", SUCCESS, out(0x5000L));
        call("cudaEventCreate", SUCCESS, out(0xE000L));
        call("cudaEventRecord", SUCCESS, event, stream);
        boolean outer = OwnCalls.starts();
        try {
            call("cudaEventQuery", SUCCESS, event); // the exit-time probe, say: it must not change the report
            assertEquals(1, pendingEvents());
            CompletableFuture.runAsync(() -> call("cudaEventQuery", SUCCESS, event)).get();
            assertEquals(0, pendingEvents(), "an application thread's query still counts");
        } finally {
            if (outer) {
                OwnCalls.ends();
            }
        }
        assertEquals(false, OwnCalls.onThisThread());
    }
}
