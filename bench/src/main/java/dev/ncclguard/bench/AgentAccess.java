package dev.ncclguard.bench;

import java.lang.instrument.Instrumentation;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;

/**
 * For the benchmarks that switch the agent's state by reflection (CreationsOnOff, TrackingOnOff):
 * the agent's internals are a named module that opens nothing, and its boot hooks' state is
 * exported to the agent alone. Given after the agent's,
 * {@code -javaagent:bench/target/ncclguard-bench.jar} opens both to the class path's code.
 * Benchmarks only: never part of an application's run.
 */
public final class AgentAccess {
    private static final String STATE = "dev.ncclguard.bootstrap.state.HookState";

    private AgentAccess() {
    }

    public static void premain(String args, Instrumentation inst) throws Exception {
        Module unnamed = ClassLoader.getSystemClassLoader().getUnnamedModule();
        Class<?> state = Class.forName(STATE, false, null);
        openAll(inst, state.getModule(), unnamed);
        // the agent's internals: the module of the JNA bridge plugged into the hooks
        Object jna = state.getField("jna").get(null);
        if (jna != null) {
            openAll(inst, jna.getClass().getModule(), unnamed);
        }
    }

    private static void openAll(Instrumentation inst, Module module, Module to) {
        if (!module.isNamed()) {
            return;
        }
        Map<String, Set<Module>> all = new HashMap<>();
        for (String p : module.getPackages()) {
            all.put(p, Set.of(to));
        }
        inst.redefineModule(module, Set.of(), all, all, Set.of(), Map.of());
    }
}
