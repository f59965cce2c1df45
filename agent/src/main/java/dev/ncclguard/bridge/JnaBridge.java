package dev.ncclguard.bridge;

import dev.ncclguard.bootstrap.JnaSink;
import dev.ncclguard.catalog.Catalog;
import dev.ncclguard.catalog.NativeFunction;
import dev.ncclguard.log.Log;
import dev.ncclguard.track.Tracker;

/**
 * The JNA interface-mapping bridge (also raw {@code com.sun.jna.Function} calls): decodes a
 * call's JNA arguments and tells the tracker. The agent's own exit-time calls are ignored.
 */
public final class JnaBridge implements JnaSink {
    public static final String NAME = "jna-interface";

    private final Tracker tracker;
    /** (library, access) pairs; an application loads two or three libraries, so a scan is cheapest. */
    private volatile Object[] accesses = new Object[0];

    public JnaBridge(Tracker tracker) {
        this.tracker = tracker;
    }

    @Override
    public Object lookup(String symbol) {
        return Catalog.lookup(symbol);
    }

    @Override
    public long enter(Object fn, Object[] args) {
        JnaArgs a = JnaArgs.current();
        if (a.agentCall) {
            return 0L;
        }
        a.with(args);
        try {
            long token = tracker.enter((NativeFunction) fn, a);
            return token == Tracker.CLAIMED_BY_CLEANUP ? JnaSink.PARK : token;
        } catch (Throwable t) {
            Log.once("jna-enter", "tracking failed in " + fn + ", tracking goes on: " + t);
            return 0L;
        } finally {
            a.clear();
        }
    }

    @Override
    public void exit(Object fn, Object library, Object[] args, Object result, long token) {
        JnaArgs a = JnaArgs.current();
        if (a.agentCall) {
            return;
        }
        a.with(args);
        try {
            tracker.exit((NativeFunction) fn, a, JnaValues.status(result), token, NAME, access(library));
        } catch (Throwable t) {
            Log.once("jna-exit", "tracking failed in " + fn + ", tracking goes on: " + t);
        } finally {
            a.clear();
        }
    }

    private NativeAccess access(Object library) {
        if (library == null) {
            return null;
        }
        Object[] known = accesses;
        for (int i = 0; i < known.length; i += 2) {
            if (known[i] == library) {
                return (NativeAccess) known[i + 1];
            }
        }
        return addAccess(library);
    }

    private synchronized NativeAccess addAccess(Object library) {
        Object[] known = accesses;
        for (int i = 0; i < known.length; i += 2) {
            if (known[i] == library) {
                return (NativeAccess) known[i + 1];
            }
        }
        NativeAccess access;
        try {
            access = new JnaNativeAccess(library);
        } catch (ReflectiveOperationException | RuntimeException e) {
            Log.once("jna-access", "cannot call back into " + library + " at exit: " + e);
            return null;
        }
        Object[] grown = java.util.Arrays.copyOf(known, known.length + 2);
        grown[known.length] = library;
        grown[known.length + 1] = access;
        accesses = grown;
        return access;
    }
}
