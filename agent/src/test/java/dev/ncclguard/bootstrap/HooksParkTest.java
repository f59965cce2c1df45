package dev.ncclguard.bootstrap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ncclguard.bootstrap.state.HookState;
import dev.ncclguard.bootstrap.state.JnaSink;
import dev.ncclguard.bootstrap.state.NativeSink;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The hook keeps an application release of a handle the cleanup claimed from reaching the library. */
class HooksParkTest {
    private static final long TOKEN = 42;

    private static JnaSink sinkAnswering(long token) {
        return new JnaSink() {
            @Override
            public Object lookup(String symbol) {
                return symbol;
            }

            @Override
            public Object find(Object fn, Object[] args) {
                return null;
            }

            @Override
            public long enter(Object fn, Object found, Object[] args) {
                return token;
            }

            @Override
            public void exit(Object fn, Object found, Object library, Object[] args, Object result, long t) {
            }
        };
    }

    @AfterEach
    void uninstall() {
        HookState.jna = null;
        HookState.natives = null;
    }

    /** Runs the call on a daemon thread and checks that it parks there for good. */
    private static void assertParks(Runnable call) throws Exception {
        AtomicLong returned = new AtomicLong(-1);
        Thread app = new Thread(() -> {
            call.run();
            returned.set(1);
        }, "app-release");
        app.setDaemon(true); // parked for good: the test JVM must not wait for it
        app.start();
        long until = System.nanoTime() + 10_000_000_000L;
        while (app.getState() != Thread.State.WAITING && System.nanoTime() < until) {
            Thread.sleep(5);
        }
        assertEquals(Thread.State.WAITING, app.getState());
        app.interrupt(); // an interrupt does not let the release through either
        app.join(300);
        assertTrue(app.isAlive());
        assertEquals(-1, returned.get(), "the call went on to the library");
    }

    @Test
    void aReleaseOfAClaimedHandleParksTheCallingThreadForGood() throws Exception {
        HookState.jna = sinkAnswering(JnaSink.PARK);
        assertParks(() -> Hooks.jnaEnter("ncclCommDestroy", null, new Object[0]));
    }

    @Test
    void aWrappedNativeReleaseOfAClaimedHandleParksToo() throws Exception {
        HookState.natives = new NativeSink() {
            @Override
            public long enter(int site, long w0, Object r0, long w1, Object r1, long w2, Object r2, long w3,
                    Object r3, long w4, Object r4) {
                return NativeSink.PARK;
            }

            @Override
            public void exit(int site, long w0, Object r0, long w1, Object r1, long w2, Object r2, long w3,
                    Object r3, long w4, Object r4, long result, Object receiver, long token) {
            }

            @Override
            public Object find(int site, long handle, Object handleRef, long stream, Object streamRef) {
                return null;
            }

            @Override
            public long token(int site, Object found) {
                return 0L;
            }

            @Override
            public void exit(int site, Object found, long handle, Object handleRef, long stream, Object streamRef,
                    long result, Object receiver, long token) {
            }
        };
        assertParks(() -> Hooks.nativeEnter(7, 0xA0L, null, 0, null, 0, null, 0, null, 0, null));
    }

    @Test
    void otherTokensPassThrough() {
        HookState.jna = sinkAnswering(TOKEN);
        assertEquals(TOKEN, Hooks.jnaEnter("ncclCommDestroy", null, new Object[0]));
    }
}
