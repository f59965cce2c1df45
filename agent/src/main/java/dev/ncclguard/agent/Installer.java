package dev.ncclguard.agent;

import static net.bytebuddy.matcher.ElementMatchers.named;
import static net.bytebuddy.matcher.ElementMatchers.returns;
import static net.bytebuddy.matcher.ElementMatchers.takesArgument;
import static net.bytebuddy.matcher.ElementMatchers.takesArguments;

import dev.ncclguard.bootstrap.Hooks;
import dev.ncclguard.bridge.Bindings;
import dev.ncclguard.bridge.FfmAdvice;
import dev.ncclguard.bridge.FfmBridge;
import dev.ncclguard.bridge.JnaBridge;
import dev.ncclguard.bridge.JnaFunctionAdvice;
import dev.ncclguard.bridge.NativeMethods;
import dev.ncclguard.log.Log;
import dev.ncclguard.track.Tracker;
import java.lang.instrument.Instrumentation;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import net.bytebuddy.asm.Advice;
import net.bytebuddy.asm.AsmVisitorWrapper;

/**
 * Installs the agent: options, tracker, bridges, exit hook. Does as little as possible here: it
 * runs before the application's main, and every millisecond is the application's start-up time.
 */
public final class Installer {
    private static final String INSTALLED = "ncclguard.installed";

    private Installer() {
    }

    public static void install(String args, Instrumentation inst, boolean premain) {
        Options options;
        Bindings bindings;
        try {
            options = Options.parse(args);
            bindings = options.bindings() == null ? Bindings.none() : Bindings.load(Path.of(options.bindings()));
        } catch (IllegalArgumentException e) {
            if (premain) {
                // like a bad -XX flag: one line, and the JVM does not start
                System.err.println(e.getMessage());
                System.exit(1);
            }
            throw e;
        }
        if (System.getProperty(INSTALLED) != null) {
            Log.warn("already installed in this JVM; the second agent is ignored");
            return;
        }
        System.setProperty(INSTALLED, "true");
        if (options.action() == Options.Action.OFF) {
            return;
        }
        try {
            Log.configure(options.logging() == Options.Logging.APPLICATION);
            Tracker tracker = new Tracker(new Tracker.Config(options.stacks(), System::currentTimeMillis));
            Lifecycle lifecycle = new Lifecycle(options, tracker);
            if (premain) {
                Hooks.mainThread = Thread.currentThread();
            }
            Hooks.jna = new JnaBridge(tracker);
            if (Runtime.version().feature() >= 22) {
                Hooks.ffm = new FfmBridge(tracker);
            }
            instrument(inst);
            NativeMethods.install(inst, tracker, bindings, premain);
            lifecycle.registerExitHook(inst);
        } catch (Throwable t) {
            Hooks.jna = null;
            Hooks.natives = null;
            Hooks.ffm = null;
            Log.error("not installed, the application runs without it", t);
        }
    }

    private static void instrument(Instrumentation inst) {
        Map<String, AsmVisitorWrapper> advice = new HashMap<>(Map.of(
                "com/sun/jna/Function", Advice.to(JnaFunctionAdvice.class).on(named("invoke")
                        .and(takesArguments(5))
                        .and(takesArgument(3, Object[].class))),
                "java/lang/Shutdown", Advice.to(ExitAdvice.Status.class)
                        .on(named("exit").and(takesArguments(int.class))),
                "java/lang/ThreadGroup", Advice.to(ExitAdvice.Uncaught.class)
                        .on(named("uncaughtException").and(takesArguments(Thread.class, Throwable.class)))));
        if (Runtime.version().feature() >= 22) {
            // FFM: where symbol lookups end, and where downcall handles for an address are made
            AsmVisitorWrapper find = Advice.to(FfmAdvice.Symbol.class)
                    .on(named("find").and(takesArguments(String.class)).and(returns(long.class)));
            advice.put("jdk/internal/loader/NativeLibraries$NativeLibraryImpl", find);
            advice.put("jdk/internal/loader/RawNativeLibraries$RawNativeLibraryImpl", find);
            advice.put("jdk/internal/foreign/abi/AbstractLinker", Advice.to(FfmAdvice.Downcall.class)
                    .on(named("downcallHandle").and(takesArguments(3))
                            .and(takesArgument(0, named("java.lang.foreign.MemorySegment")))));
        }
        new AdviceTransformer(advice).install(inst);
    }
}
