package dev.ncclguard.agent;

import dev.ncclguard.bootstrap.Hooks;
import dev.ncclguard.bootstrap.state.HookState;
import dev.ncclguard.log.Log;
import java.lang.instrument.Instrumentation;
import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Makes JFR's exit-time dump wait for the agent's exit report. JFR dumps a recording started with
 * -XX:StartFlightRecording from an application shutdown hook, which runs before the agent's exit
 * hook; the LeakFound and CleanupAction events that the exit report commits would come too late
 * for it. So JFR's hook is taken out of the application's hooks (when JFR adds it, through advice
 * on ApplicationShutdownHooks.add, or now if it already did) and run at the end of the agent's.
 */
final class JfrShutdown {
    /** False when ApplicationShutdownHooks was not even loaded at install: no hook to look for then. */
    static volatile boolean hooksMayExist = true;

    private JfrShutdown() {
    }

    /** Called once the agent's exit hook is in its slot after the application's hooks. */
    static void deferUntilAfterReport(Instrumentation inst) {
        HookState.deferJfrShutdown = true;
        Thread already = hooksMayExist ? registeredJfrHook(inst) : null;
        if (already != null && HookState.jfrShutdownHook == null) {
            try {
                if (Runtime.getRuntime().removeShutdownHook(already)) {
                    HookState.jfrShutdownHook = already;
                }
            } catch (IllegalStateException e) {
                // the JVM is already shutting down: JFR's hook runs where it is
            }
        }
    }

    /** Runs JFR's hook if it was kept back; at most once. */
    static void runDeferred() {
        Thread hook = HookState.jfrShutdownHook;
        HookState.jfrShutdownHook = null;
        if (hook != null) {
            try {
                hook.run();
            } catch (Throwable t) {
                Log.error("JFR's exit-time dump failed", t);
            }
        }
    }

    /** JFR's hook among the application's hooks, or null: found by its thread name. */
    private static Thread registeredJfrHook(Instrumentation inst) {
        try {
            Module base = Object.class.getModule();
            Module own = JfrShutdown.class.getModule();
            if (!base.isOpen("java.lang", own)) {
                inst.redefineModule(base, Set.of(), Map.of(), Map.of("java.lang", Set.of(own)), Set.of(), Map.of());
            }
            Class<?> hooks = Class.forName("java.lang.ApplicationShutdownHooks");
            Field field = hooks.getDeclaredField("hooks");
            field.setAccessible(true);
            List<Thread> registered;
            synchronized (hooks) {
                Map<?, ?> map = (Map<?, ?>) field.get(null);
                registered = map == null ? List.of() : new ArrayList<>(castThreads(map.keySet()));
            }
            for (Thread t : registered) {
                if (Hooks.JFR_SHUTDOWN_HOOK.equals(t.getName())) {
                    return t;
                }
            }
        } catch (ReflectiveOperationException | RuntimeException e) {
            Log.once("jfr-hook", "cannot order JFR's exit dump after the exit report (" + e
                    + "); a recording dumped at exit lacks the LeakFound and CleanupAction events");
        }
        return null;
    }

    private static List<Thread> castThreads(Set<?> keys) {
        List<Thread> out = new ArrayList<>();
        for (Object k : keys) {
            if (k instanceof Thread t) {
                out.add(t);
            }
        }
        return out;
    }
}
