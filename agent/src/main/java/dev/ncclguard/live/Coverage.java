package dev.ncclguard.live;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** What the agent could instrument and what not, one line per bridge or hook, for the attach command. */
final class Coverage {
    private Coverage() {
    }

    /**
     * @param instrumented per class the hooks went into, what became of each loaded copy
     * @param bridges      a line per other bridge
     */
    static List<String> describe(Map<String, List<String>> instrumented, List<String> bridges) {
        List<String> lines = new ArrayList<>();
        lines.add(line("JNA interface mapping and raw Function calls", instrumented, "com.sun.jna.Function"));
        lines.add(line("exit status (System.exit, signals)", instrumented, "java.lang.Shutdown"));
        lines.add(line("exit status (main thread dying of an exception)", instrumented, "java.lang.ThreadGroup"));
        lines.addAll(bridges);
        return lines;
    }

    private static String line(String what, Map<String, List<String>> instrumented, String className) {
        List<String> states = instrumented.getOrDefault(className, List.of("not instrumented"));
        return what + " (" + className + "): " + String.join("; ", states);
    }
}
