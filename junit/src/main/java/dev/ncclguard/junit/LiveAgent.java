package dev.ncclguard.junit;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.Collection;
import java.util.List;

/**
 * The agent's live leaks, reached by reflection on {@code dev.ncclguard.bootstrap.Live} in the
 * bootstrap class loader (where the agent defines it): this artifact never links the agent's
 * classes, so it works with whatever agent jar the test JVM was started with.
 */
final class LiveAgent {
    static final String LIVE_CLASS = "dev.ncclguard.bootstrap.Live";

    private final Method leakIds;
    private final Method describe;

    private LiveAgent(Class<?> live) throws NoSuchMethodException {
        this.leakIds = live.getMethod("leakIds");
        this.describe = live.getMethod("describe", Collection.class);
    }

    /** What finding the agent gave: the agent, or why there is none. */
    record Lookup(LiveAgent agent, String problem) {
    }

    static Lookup find() {
        Class<?> live;
        try {
            live = Class.forName(LIVE_CLASS, true, null);
        } catch (ClassNotFoundException e) {
            return new Lookup(null, "the ncclguard agent is not running in this JVM");
        }
        try {
            if (!(Boolean) live.getMethod("tracking").invoke(null)) {
                return new Lookup(null, "the ncclguard agent is loaded but not tracking (action=off)");
            }
            return new Lookup(new LiveAgent(live), null);
        } catch (ReflectiveOperationException | RuntimeException e) {
            return new Lookup(null, "the ncclguard agent in this JVM has no live view (" + e
                    + "); use an agent jar of the same version as ncclguard-junit");
        }
    }

    @SuppressWarnings("unchecked")
    List<String> leakIds() {
        return (List<String>) call(leakIds);
    }

    String describe(Collection<String> ids) {
        return (String) call(describe, ids);
    }

    private static Object call(Method method, Object... args) {
        try {
            return method.invoke(null, args);
        } catch (InvocationTargetException e) {
            throw new IllegalStateException("ncclguard: the agent's live view failed: " + e.getCause(), e.getCause());
        } catch (IllegalAccessException e) {
            throw new IllegalStateException("ncclguard: cannot call the agent's live view: " + e, e);
        }
    }
}
