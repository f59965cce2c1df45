package dev.ncclguard.bridge.interposer;

import dev.ncclguard.catalog.Catalog;
import dev.ncclguard.catalog.NativeFunction;
import dev.ncclguard.track.NativeAccess;
import dev.ncclguard.track.NativeOrigin;
import dev.ncclguard.track.NoCudaLibrary;
import java.util.List;
import java.util.Objects;

/**
 * One call site in native code, as the native library names it (its {@code caller} id): the
 * exit-time calls of the handles made there go to the real function that caller reaches
 * (NCCL linked into the calling library, or the loaded libnccl.so.2 and libcudart.so.13; the
 * driver, libcuda.so.1, for a static cudart's handles and where no runtime is loaded), never
 * through a wrapper; and the report says who called (library, symbol, native backtrace), asked
 * of the library when the report is made. Two sites of one calling library are one access
 * (equal), so that cleanup aborts that library's communicators of a device together.
 */
final class CallerAccess implements NativeAccess, NativeOrigin {
    private final long caller;
    private volatile String library;
    private volatile String symbol;
    private volatile List<String> nativeStack;
    private volatile boolean named;

    CallerAccess(long caller) {
        this.caller = caller;
    }

    long caller() {
        return caller;
    }

    private void name() {
        if (named) {
            return;
        }
        String lib;
        String sym;
        String bt;
        try {
            lib = Interposer.callerLibrary(caller);
            sym = Interposer.callerSymbol(caller);
            bt = Interposer.callerBacktrace(caller);
        } catch (LinkageError e) {
            lib = null;
            sym = null;
            bt = null;
        }
        library = lib == null || lib.isEmpty() ? null : lib;
        symbol = sym;
        nativeStack = bt == null || bt.isEmpty() ? List.of() : List.of(bt.split("\n"));
        named = true;
    }

    @Override
    public String library() {
        String lib = callerLibrary();
        return lib != null ? lib : "native code";
    }

    @Override
    public String callerLibrary() {
        name();
        return library;
    }

    @Override
    public String callerSymbol() {
        name();
        return symbol;
    }

    @Override
    public List<String> nativeStack() {
        name();
        return nativeStack;
    }

    /** Integer and pointer functions of at most four arguments (what the library's call() makes). */
    @Override
    public int call(String symbol, Object... args) {
        NativeFunction fn = Catalog.lookup(symbol);
        if (fn == null || args.length > 4 || !callable(fn)) {
            throw new IllegalArgumentException(symbol + " cannot be called through the native library");
        }
        long[] a = new long[4];
        for (int i = 0; i < args.length; i++) {
            Object v = args[i];
            a[i] = v instanceof Number n ? n.longValue() : 0;
        }
        int status = Interposer.call(caller, fn.id(), a[0], a[1], a[2], a[3]);
        if (status == Interposer.NO_CUDA) {
            throw new NoCudaLibrary();
        }
        return status;
    }

    /** As catalog.CHeader decides it: at most four parameters, none a struct by value. */
    private static boolean callable(NativeFunction fn) {
        String params = Catalog.cParameters(fn);
        return params.split(",").length <= 4 && !params.contains("ncclUniqueId ");
    }

    @Override
    public boolean reachesCudaRuntime() {
        return true;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof CallerAccess other && (other.caller == caller
                || (callerLibrary() != null && Objects.equals(callerLibrary(), other.callerLibrary())));
    }

    @Override
    public int hashCode() {
        return Objects.hashCode(callerLibrary());
    }

    @Override
    public String toString() {
        return "native code in " + library();
    }
}
