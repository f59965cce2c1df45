package dev.ncclguard.track;

import static dev.ncclguard.track.FakeArgs.args;

import dev.ncclguard.catalog.Catalog;
import dev.ncclguard.catalog.NativeFunction;
import dev.ncclguard.catalog.Status;

/** Drives a tracker the way a bridge does: enter, the native call's status, exit. */
final class Driver {
    static final String BRIDGE = "test-bridge";
    static final int NOT_READY = Status.CUDA_ERROR_NOT_READY;
    static final int NOCOLOR = -1;

    final Tracker tracker;

    Driver(Tracker tracker) {
        this.tracker = tracker;
    }

    static NativeFunction fn(String symbol) {
        NativeFunction fn = Catalog.lookup(symbol);
        if (fn == null) {
            throw new AssertionError("not in the catalog: " + symbol);
        }
        return fn;
    }

    long enter(String symbol, FakeArgs a) {
        return tracker.enter(fn(symbol), a);
    }

    void exit(String symbol, FakeArgs a, int status, long token) {
        tracker.exit(fn(symbol), a, status, token, BRIDGE, FakeArgs.ACCESS);
    }

    void call(String symbol, FakeArgs a, int status) {
        exit(symbol, a, status, enter(symbol, a));
    }

    void call(String symbol, FakeArgs a) {
        call(symbol, a, 0);
    }

    // --- the calls most tests need, with their C argument positions ---

    void initRank(long comm, int nranks, int rank, byte[] id) {
        call("ncclCommInitRank", args().out(0, comm).i(1, nranks).bytes(2, id).i(3, rank));
    }

    void split(long parent, int color, int key, long child) {
        call("ncclCommSplit", args().handle(0, parent).i(1, color).i(2, key).out(3, child));
    }

    void shrink(long parent, long child, int... excluded) {
        call("ncclCommShrink", args().handle(0, parent).ints(1, excluded).i(2, excluded.length).out(3, child));
    }

    void destroy(long comm) {
        call("ncclCommDestroy", args().handle(0, comm));
    }

    void allReduce(long comm, long stream) {
        call("ncclAllReduce", args().handle(5, comm).handle(6, stream));
    }

    void eventCreate(long event) {
        call("cudaEventCreate", args().out(0, event));
    }

    void record(long event, long stream) {
        call("cudaEventRecord", args().handle(0, event).handle(1, stream));
    }

    void eventSync(long event) {
        call("cudaEventSynchronize", args().handle(0, event));
    }

    void eventQuery(long event, int status) {
        call("cudaEventQuery", args().handle(0, event), status);
    }

    void eventDestroy(long event) {
        call("cudaEventDestroy", args().handle(0, event));
    }

    void streamCreate(long stream) {
        call("cudaStreamCreate", args().out(0, stream));
    }

    void streamSync(long stream) {
        call("cudaStreamSynchronize", args().handle(0, stream));
    }

    void streamQuery(long stream, int status) {
        call("cudaStreamQuery", args().handle(0, stream), status);
    }

    void streamDestroy(long stream) {
        call("cudaStreamDestroy", args().handle(0, stream));
    }

    void deviceSync() {
        call("cudaDeviceSynchronize", args());
    }

    void setDevice(int device) {
        call("cudaSetDevice", args().i(0, device));
    }

    static byte[] uniqueId(int seed) {
        byte[] id = new byte[Catalog.UNIQUE_ID_BYTES];
        for (int i = 0; i < id.length; i++) {
            id[i] = (byte) (seed * 31 + i);
        }
        return id;
    }
}
