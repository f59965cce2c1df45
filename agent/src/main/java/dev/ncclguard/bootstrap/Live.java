package dev.ncclguard.bootstrap;

import java.util.Collection;
import java.util.List;

/**
 * The agent's live leaks for code in the same JVM, such as the JUnit extension. Defined in the
 * bootstrap class loader, so any class loader finds this one copy with
 * {@code Class.forName("dev.ncclguard.bootstrap.Live", true, null)}; it speaks only JDK types, so
 * callers never link the agent's classes. Absent from the JVM when the agent is not loaded.
 */
public final class Live {
    /** Set once the agent tracks; null while it does not (action=off). */
    public static volatile LiveView view;

    private Live() {
    }

    /** Whether the agent is tracking in this JVM (false with action=off). */
    public static boolean tracking() {
        return view != null;
    }

    /** The ids of the leaks of this moment, empty when not tracking. */
    public static List<String> leakIds() {
        LiveView v = view;
        return v == null ? List.of() : v.leakIds();
    }

    /** The leaks of {@code ids} as the text report prints them, "" when not tracking. */
    public static String describe(Collection<String> ids) {
        LiveView v = view;
        return v == null ? "" : v.describe(ids);
    }
}
