package dev.ncclguard.bridge.natives;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ncclguard.bootstrap.state.HookState;
import dev.ncclguard.config.Bindings;
import dev.ncclguard.weave.CallSiteRewriter;
import dev.ncclguard.weave.Slots;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import net.bytebuddy.jar.asm.Type;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Rewrites the callers in {@link Callers} of the methods of {@link Callees} (Java methods here, so
 * that the rewritten calls can run; the rewriter does not care what the callee is) and runs them
 * from a fresh class loader: the class verifies, each call goes through the hooks with the
 * wrapper's arguments array, and results and exceptions are those of the call itself.
 */
class CallSiteRewriterTest {
    private static final String CALLEES = Callees.class.getName().replace('.', '/');
    private static final Map<String, NativeSite> SITES = Map.of(
            CALLEES + ".ncclCommInitRank(I[BI)J", site(7, "ncclCommInitRank", "(I[BI)J", true,
                    "nranks=0 uniqueId=1 rank=2 handle=return"),
            CALLEES + ".cudaEventQuery(J)I", site(8, "cudaEventQuery", "(J)I", true, "handle=0"),
            CALLEES + ".cudaEventCreate(J)Ljava/lang/String;", site(9, "cudaEventCreate", "(J)Ljava/lang/String;",
                    false, "handle=0"));

    /** The rewriter's view of SITES: each method's site, each site's slots. */
    private static final Map<String, Integer> SITE_IDS = new HashMap<>();
    private static final Map<Integer, Slots> SITE_SLOTS = new HashMap<>();

    static {
        SITES.forEach((method, site) -> {
            SITE_IDS.put(method, site.id());
            SITE_SLOTS.put(site.id(), site.slots());
        });
    }

    private final RecordingSink sink = new RecordingSink();
    private final List<RecordingSink.Call> entered = sink.entered;
    private final List<RecordingSink.Call> exited = sink.exited;

    /** The site of Callees' method {@code name}, mapped as a bindings line would. */
    private static NativeSite site(int id, String name, String descriptor, boolean isStatic, String roles) {
        Bindings b = Bindings.parse("test", List.of(Callees.class.getName() + "#" + name + descriptor + " = " + name
                + " " + roles));
        Bindings.Entry e = b.find(CALLEES, name, descriptor);
        return new NativeSite(id, e.fn(), NativeBridge.JNI, Callees.class.getName(), null, name, descriptor, isStatic,
                Type.getArgumentTypes(descriptor).length, 'I', NativeSite.identity(0));
    }

    @AfterEach
    void unplug() {
        HookState.natives = null;
    }

    /** Stand-ins for native methods of a class loaded before the attach; public, for the callers' other loader. */
    public static class Callees {
        public static long ncclCommInitRank(int nranks, byte[] id, int rank) {
            return 0x1000L + nranks * 10L + rank;
        }

        public static int cudaEventQuery(long event) {
            if (event == 0) {
                throw new IllegalStateException("the call's own failure");
            }
            return 600;
        }

        public String cudaEventCreate(long flags) {
            return "event-" + flags;
        }
    }

    /** The application's code that calls them, with branches and a loop around the calls. */
    static class Callers {
        static long join(int nranks, int rank) {
            byte[] id = new byte[] {1, 2};
            long comm = 0;
            for (int i = 0; i < 2; i++) {
                comm = i == 0 ? Callees.ncclCommInitRank(nranks, id, rank) : comm;
            }
            return comm;
        }

        static int query(long event) {
            double before = 1.5; // a wide local below the parked arguments
            int status = Callees.cudaEventQuery(event);
            return before > 1 ? status : -1;
        }

        static String create(Callees callees, long flags) {
            return callees.cudaEventCreate(flags);
        }

        static int untouched() {
            return Integer.parseInt("3");
        }
    }

    private Class<?> rewritten() throws Exception {
        int[] count = new int[1];
        byte[] bytes = CallSiteRewriter.rewrite(NativeFixtures.bytesOf(Callers.class), SITE_IDS, SITE_SLOTS::get,
                n -> count[0] += n);
        assertNotNull(bytes);
        assertEquals(3, count[0], "call sites rewritten");
        HookState.natives = sink;
        return NativeFixtures.define(Callers.class.getName(), bytes, getClass().getClassLoader());
    }

    private static Object call(Class<?> c, String method, Object... args) throws Throwable {
        for (Method m : c.getDeclaredMethods()) {
            if (m.getName().equals(method)) {
                m.setAccessible(true);
                try {
                    return m.invoke(null, args);
                } catch (InvocationTargetException e) {
                    throw e.getCause();
                }
            }
        }
        throw new AssertionError("no " + method);
    }

    @Test
    void staticCallGoesThroughTheHooksWithItsArgumentsAndResult() throws Throwable {
        Class<?> c = rewritten();
        assertEquals(0x1000L + 20 + 1, call(c, "join", 2, 1));
        assertEquals(1, entered.size());
        RecordingSink.Call in = entered.get(0);
        assertEquals(7, in.site());
        assertEquals(2, in.word(0), "nranks");
        assertArrayEquals(new byte[] {1, 2}, (byte[]) in.ref(1), "the unique id, as it is");
        assertEquals(1, in.word(2), "rank");
        assertEquals(1, exited.size());
        RecordingSink.Call out = exited.get(0);
        assertEquals(0x1000L + 21, out.result(), "the long result");
        assertEquals(RecordingSink.TOKEN, out.token(), "enter's token");
        assertSame(in.ref(1), out.ref(1));
        assertNull(out.receiver());
    }

    @Test
    void intResultIsHandedToExitAndReturned() throws Throwable {
        Class<?> c = rewritten();
        assertEquals(600, call(c, "query", 5L));
        assertEquals(5L, entered.get(0).word(0));
        assertEquals(8, exited.get(0).site());
        assertEquals(600L, exited.get(0).result());
    }

    @Test
    void instanceCallHandsTheReceiverAndAReferenceResultAsZero() throws Throwable {
        Class<?> c = rewritten();
        Callees callees = new Callees();
        assertEquals("event-3", call(c, "create", callees, 3L));
        RecordingSink.Call out = exited.get(0);
        assertEquals(3L, out.word(0));
        assertEquals(0L, out.result());
        assertSame(callees, out.receiver());
    }

    @Test
    void whatTheCallThrowsComesOutAsIsWithoutExit() throws Throwable {
        Class<?> c = rewritten();
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> call(c, "query", 0L));
        assertEquals("the call's own failure", e.getMessage());
        assertEquals(1, entered.size());
        assertTrue(exited.isEmpty());
    }

    @Test
    void otherCallsAreLeftAlone() throws Throwable {
        Class<?> c = rewritten();
        assertEquals(3, call(c, "untouched"));
        assertTrue(entered.isEmpty());
    }

    @Test
    void classWithoutSuchCallsIsNotRewritten() {
        assertNull(CallSiteRewriter.rewrite(NativeFixtures.bytesOf(Callees.class), SITE_IDS, SITE_SLOTS::get, n -> { }));
    }
}
