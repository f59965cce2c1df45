package dev.ncclguard.report;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.Proxy;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.FutureTask;
import org.junit.jupiter.api.Test;

class StackFramesTest {
    private static Throwable withStack(StackTraceElement... frames) {
        Throwable t = new Throwable();
        t.setStackTrace(frames);
        return t;
    }

    private static StackTraceElement frame(String cls, String method, String file, int line) {
        return new StackTraceElement(cls, method, file, line);
    }

    @Test
    void agentJnaReflectionAndProxyFramesAreRemovedSoTheApplicationCallComesFirst() {
        Throwable creation = withStack(
                frame("dev.ncclguard.bootstrap.Hooks", "exit", "Hooks.java", 20),
                frame("dev.ncclguard.track.Tracker", "exit", "Tracker.java", 88),
                frame("com.sun.jna.Function", "invoke", "Function.java", 419),
                frame("com.sun.jna.Library$Handler", "invoke", "Library.java", 263),
                frame("jdk.proxy2.$Proxy12", "ncclCommInitRank", null, -1),
                frame("com.sun.proxy.$Proxy7", "ncclCommInitRank", null, -1),
                frame("com.example.nccl.$Proxy3", "ncclCommInitRank", null, -1),
                frame("jdk.internal.reflect.DirectMethodHandleAccessor", "invoke", "DirectMethodHandleAccessor.java", 103),
                frame("java.lang.reflect.Method", "invoke", "Method.java", 580),
                frame("sun.reflect.NativeMethodAccessorImpl", "invoke0", null, -2),
                frame("java.lang.invoke.LambdaForm$DMH/0x000001", "invokeVirtual", null, -1),
                frame("com.example.Train", "setup", "Train.java", 42),
                frame("dev.ncclguard.samples.Leaky", "main", "Leaky.java", 17));

        assertEquals(List.of("com.example.Train.setup(Train.java:42)", "dev.ncclguard.samples.Leaky.main(Leaky.java:17)"),
                StackFrames.format(creation));
    }

    @Test
    void framesAreFormattedWithoutModuleOrLoaderPrefixes() {
        Throwable creation = withStack(
                new StackTraceElement("app", "app.jar", "1.0", "com.example.A", "run", "A.java", 7),
                frame("com.example.B", "call", null, -1),
                frame("com.example.C", "peek", "C.java", -1),
                frame("com.example.D", "nativeCall", null, -2));

        assertEquals(List.of("com.example.A.run(A.java:7)", "com.example.B.call(Unknown Source)",
                "com.example.C.peek(C.java)", "com.example.D.nativeCall(Native Method)"), StackFrames.format(creation));
    }

    @Test
    void longStacksAreCutAtSixtyFourFramesWithACountOfTheRest() {
        StackTraceElement[] frames = new StackTraceElement[100];
        for (int i = 0; i < frames.length; i++) {
            frames[i] = frame("com.example.Deep", "level" + i, "Deep.java", i + 1);
        }
        Throwable creation = withStack(frames);

        List<String> formatted = StackFrames.format(creation);
        assertEquals(StackFrames.MAX_FRAMES + 1, formatted.size());
        assertEquals("com.example.Deep.level63(Deep.java:64)", formatted.get(63));
        assertEquals("... 36 more", formatted.get(64));
    }

    @Test
    void hiddenFramesDoNotCountTowardsTheCap() {
        StackTraceElement[] frames = new StackTraceElement[64 + 10];
        for (int i = 0; i < 10; i++) {
            frames[i] = frame("com.sun.jna.Function", "invoke", "Function.java", i);
        }
        for (int i = 10; i < frames.length; i++) {
            frames[i] = frame("com.example.App", "m" + i, "App.java", i);
        }
        assertEquals(64, StackFrames.format(withStack(frames)).size());
    }

    @Test
    void noCapturedStackGivesNoFrames() {
        assertEquals(List.of(), StackFrames.format(null));
    }

    @Test
    void onlyTheJdksProxyModulesAreHiddenNotLookalikePackages() {
        assertTrue(StackFrames.hidden("jdk.proxy1.$Proxy9"));
        assertTrue(StackFrames.hidden("jdk.proxy12.Anything"));
        assertFalse(StackFrames.hidden("jdk.proxyless.Thing"));
        assertFalse(StackFrames.hidden("com.example.ProxyFactory"));
        assertFalse(StackFrames.hidden("dev.ncclguard.samples.Scenarios"));
        assertTrue(StackFrames.hidden("dev.ncclguard.shaded.bytebuddy.asm.Advice"));
    }

    interface Library {
        long ncclCommInitRank(int rank);
    }

    /**
     * A real stack captured inside a dynamic proxy's handler reached through reflection, the way the
     * agent captures one inside JNA's Library.Handler. This test class counts as agent (its package
     * is dev.ncclguard.report), so the first application frame left is the JDK's FutureTask.run
     * that called the proxy.
     */
    @Test
    void realStackThroughAProxyAndReflectionStartsAtTheCaller() throws Exception {
        Throwable[] captured = new Throwable[1];
        InvocationHandler handler = (proxy, method, args) -> {
            captured[0] = new Throwable("creation");
            return 0L;
        };
        Library library = (Library) Proxy.newProxyInstance(Library.class.getClassLoader(),
                new Class<?>[] {Library.class}, handler);
        Callable<Object> call = () -> Library.class.getMethod("ncclCommInitRank", int.class).invoke(library, 0);
        FutureTask<Object> task = new FutureTask<>(call);
        task.run();
        task.get();

        List<String> frames = StackFrames.format(captured[0]);
        assertTrue(frames.get(0).startsWith("java.util.concurrent.FutureTask.run(FutureTask.java:"), frames.toString());
        for (String frame : frames) {
            assertFalse(frame.contains("$Proxy") || frame.startsWith("java.lang.reflect.")
                    || frame.startsWith("jdk.internal.reflect.") || frame.startsWith("dev.ncclguard.report."), frame);
        }
    }

    /** A stack that counts how often its frames are resolved. */
    private static final class Counted extends Throwable {
        int resolved;

        Counted(StackTraceElement... frames) {
            setStackTrace(frames);
        }

        @Override
        public StackTraceElement[] getStackTrace() {
            resolved++;
            return super.getStackTrace();
        }
    }

    @Test
    void aStackSharedByLeaksIsResolvedOnceWhateverLeaksComeBetween() {
        Counted a = new Counted(frame("com.example.Train", "setup", "Train.java", 42));
        Counted b = new Counted(frame("com.example.Train", "step", "Train.java", 57));
        StackFrames.Cache cache = new StackFrames.Cache();
        List<String> first = cache.format(a);
        cache.format(b);
        cache.format(a);
        cache.format(b);
        assertSame(first, cache.format(a));
        assertEquals(1, a.resolved);
        assertEquals(1, b.resolved);
    }

    @Test
    void stacksCapturedApartThatReadTheSameShareOneList() {
        Throwable a = withStack(frame("com.example.Train", "setup", "Train.java", 42));
        Throwable b = withStack(frame("com.example.Train", "setup", "Train.java", 42));
        StackFrames.Cache cache = new StackFrames.Cache();
        assertSame(cache.format(a), cache.format(b));
    }
}
