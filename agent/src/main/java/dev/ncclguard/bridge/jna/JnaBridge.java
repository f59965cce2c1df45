package dev.ncclguard.bridge.jna;

import dev.ncclguard.bootstrap.JnaHandle;
import dev.ncclguard.bootstrap.state.JnaSink;
import dev.ncclguard.bridge.ArrayArgs;
import dev.ncclguard.bridge.BindingValues;
import dev.ncclguard.bridge.CallProtocol;
import dev.ncclguard.bridge.JnaHandles;
import dev.ncclguard.catalog.Catalog;
import dev.ncclguard.catalog.NativeFunction;
import dev.ncclguard.log.Log;
import dev.ncclguard.track.NativeAccess;
import dev.ncclguard.track.Tracker;

/**
 * The JNA interface-mapping bridge (also raw {@code com.sun.jna.Function} calls): decodes a
 * call's JNA arguments and tells the tracker. The agent's own exit-time calls are ignored.
 */
public final class JnaBridge implements JnaSink {
    public static final String NAME = "jna-interface";
    private static final int HANDLE = 0;
    private static final int STREAM = 1;

    private final CallProtocol calls;
    /** (library, access) pairs; an application loads two or three libraries, so a scan is cheapest. */
    private volatile Object[] accesses = new Object[0];
    /**
     * Per catalog function and argument (its handle, its stream): the reader for the JNA of the
     * first argument seen there. Every reader reads any argument, only slower when it is not of
     * its JNA. Written without ordering: a reader is immutable, and a lost write only repeats.
     */
    private final JnaHandle[] readers = new JnaHandle[Catalog.size() * 2];

    public JnaBridge(Tracker tracker) {
        this.calls = new CallProtocol(tracker, "jna", true);
    }

    @Override
    public Object lookup(String symbol) {
        return Catalog.lookup(symbol);
    }

    /**
     * The hot calls (onHandles) find their record here, decoding the handle or stream straight
     * from JNA's arguments; the others go through {@link ArrayArgs} in {@link #enter} and
     * {@link #exit}.
     */
    @Override
    public Object find(Object fn, Object[] args) {
        NativeFunction f = (NativeFunction) fn;
        if (!CallProtocol.onHandles(f)) {
            return null;
        }
        return CallProtocol.findsByStream(f) ? calls.find(f, 0L, handle(f, STREAM, args))
                : calls.find(f, handle(f, HANDLE, args), 0L);
    }

    @Override
    public long enter(Object fn, Object found, Object[] args) {
        NativeFunction f = (NativeFunction) fn;
        if (CallProtocol.onHandles(f)) {
            return calls.token(f, found);
        }
        ArrayArgs a = ArrayArgs.of(args);
        try {
            return calls.enter(f, a);
        } finally {
            a.clear();
        }
    }

    @Override
    public void exit(Object fn, Object found, Object library, Object[] args, Object result, long token) {
        NativeFunction f = (NativeFunction) fn;
        int status = BindingValues.status(result);
        if (CallProtocol.onHandles(f)) {
            if (CallProtocol.exitReadsHandles(f, found)) {
                calls.exit(f, found, handle(f, HANDLE, args), handle(f, STREAM, args), status, token, NAME,
                        access(library));
            } else {
                calls.exit(f, found, CallProtocol.NOT_READ, CallProtocol.NOT_READ, status, token, NAME, null);
            }
            return;
        }
        ArrayArgs a = ArrayArgs.of(args);
        try {
            calls.exit(f, a, status, token, NAME, access(library));
        } finally {
            a.clear();
        }
    }

    /** The handle passed by value at {@code f}'s handle or stream position, 0 if none. */
    private long handle(NativeFunction f, int which, Object[] args) {
        int index = which == HANDLE ? f.handle() : f.stream();
        if (args == null || index < 0 || index >= args.length) {
            return 0L;
        }
        Object arg = args[index];
        if (arg == null) {
            return 0L;
        }
        int slot = f.id() * 2 + which;
        JnaHandle reader = readers[slot];
        if (reader == null) {
            reader = JnaHandles.forArgument(arg);
            readers[slot] = reader;
        }
        return reader.of(arg);
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
