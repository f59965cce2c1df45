package dev.ncclguard.bootstrap;

import dev.ncclguard.bootstrap.state.HookState;
import dev.ncclguard.bootstrap.state.LiveView;
import java.util.Collection;
import java.util.List;

/**
 * The agent's live leaks for code in the same JVM, such as the JUnit extension. Defined in the
 * bootstrap class loader, so any class loader finds this one copy with
 * {@code Class.forName("dev.ncclguard.bootstrap.Live", true, null)}; it speaks only JDK types, so
 * callers never link the agent's classes. Absent from the JVM when the agent is not loaded.
 */
public final class Live {
    private Live() {
    }

    /** Whether the agent is tracking in this JVM (false with action=off). */
    public static boolean tracking() {
        return HookState.live != null;
    }

    /** The ids of the leaks of this moment, empty when not tracking. */
    public static List<String> leakIds() {
        LiveView v = HookState.live;
        return v == null ? List.of() : v.leakIds();
    }

    /** The leaks of {@code ids} as the text report prints them, "" when not tracking. */
    public static String describe(Collection<String> ids) {
        LiveView v = HookState.live;
        return v == null ? "" : v.describe(ids);
    }
}
