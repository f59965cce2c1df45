package dev.ncclguard.bench;

import com.sun.jna.Pointer;
import com.sun.jna.PointerType;
import dev.ncclguard.bootstrap.Hooks;
import dev.ncclguard.bootstrap.state.HookState;
import dev.ncclguard.bridge.natives.NativeBridge;
import dev.ncclguard.catalog.Catalog;
import dev.ncclguard.catalog.NativeFunction;
import dev.ncclguard.track.CallArgs;
import dev.ncclguard.track.Tracker;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/**
 * The native-method bridge's work per call, without the native call: what a generated wrapper runs
 * around the renamed native, next to the tracker alone on the cheapest possible arguments
 * ({@code tracker*}). Their difference is the wrapper's and bridge's own part. For these hot calls
 * the wrapper runs the carried-record hooks (Hooks.nativeFind and nativeToken before the native,
 * nativeExitFound after it, with the handle's and the stream's slots, the record kept in a local);
 * {@code slots*} run the general hooks (Hooks.nativeEnter and nativeExit with all five slots,
 * the tracker's CallArgs path), which the wrapper used for them before. Handles as JNI passes
 * them (long), as JNA direct mapping does (Pointer, whose address the wrapper reads with
 * Pointer.nativeValue, as here), and as a typed JNA handle (a PointerType, handed over as a
 * reference that the bridge reads). Needs the agent jar on the class path:
 * {@code java -cp ncclguard-bench.jar:ncclguard-agent.jar org.openjdk.jmh.Main NativeBridgePath}.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class NativeBridgePath {
    private static final long EVENT = 0x7f00_1000_0000L;
    private static final long STREAM = 0x7f00_2000_0000L;
    private static final long COMM = 0x7f00_3000_0000L;
    private static final String OWNER = "Bench";

    private Tracker tracker;
    private int query;
    private int record;
    private int allReduce;
    private int queryPointer;
    private int recordPointer;
    private int allReducePointer;
    private int queryTyped;
    private int recordTyped;
    private int allReduceTyped;
    private final Handle typedEvent = new Handle(EVENT);
    private final Handle typedStream = new Handle(STREAM);
    private final Handle typedComm = new Handle(COMM);
    private final Pointer event = new Pointer(EVENT);
    private final Pointer stream = new Pointer(STREAM);
    private final Pointer comm = new Pointer(COMM);
    private final NativeFunction queryFn = Catalog.lookup("cudaEventQuery");
    private final NativeFunction recordFn = Catalog.lookup("cudaEventRecord");
    private final NativeFunction allReduceFn = Catalog.lookup("ncclAllReduce");
    private final Fixed queryArgs = new Fixed().at(0, EVENT);
    private final Fixed recordArgs = new Fixed().at(0, EVENT).at(1, STREAM);
    private final Fixed allReduceArgs = new Fixed().at(5, COMM).at(6, STREAM);

    /** A typed JNA handle (cudaEvent_t, cudaStream_t, ncclComm_t) as JNA direct mappings declare them. */
    public static final class Handle extends PointerType {
        public Handle() {
        }

        Handle(long address) {
            super(new Pointer(address));
        }
    }

    /** The cheapest CallArgs: handles by C position from an array. */
    static final class Fixed implements CallArgs {
        private final long[] handles = new long[8];

        Fixed at(int index, long handle) {
            handles[index] = handle;
            return this;
        }

        @Override
        public long handle(int index) {
            return handles[index];
        }

        @Override
        public long handleOut(int index) {
            return handles[index];
        }

        @Override
        public long handleOut(int index, int i) {
            return i == 0 ? handles[index] : 0;
        }

        @Override
        public int intArg(int index) {
            return (int) handles[index];
        }

        @Override
        public int intArray(int index, int i, int fallback) {
            return fallback;
        }

        @Override
        public byte[] bytes(int index, int length) {
            return new byte[length];
        }
    }

    @Setup
    public void setUp() {
        tracker = new Tracker(new Tracker.Config(false, System::currentTimeMillis));
        NativeBridge bridge = new NativeBridge(tracker, "$$bench$$");
        HookState.natives = bridge;
        int createEvent = bridge.addStaticSite(OWNER, "cudaEventCreate", "([J)I");
        int createStream = bridge.addStaticSite(OWNER, "cudaStreamCreate", "([J)I");
        int initRank = bridge.addStaticSite(OWNER, "ncclCommInitRank", "([JI[BI)I");
        query = bridge.addStaticSite(OWNER, "cudaEventQuery", "(J)I");
        record = bridge.addStaticSite(OWNER, "cudaEventRecord", "(JJ)I");
        allReduce = bridge.addStaticSite(OWNER, "ncclAllReduce", "(JJJIIJJ)I");
        String p = "Lcom/sun/jna/Pointer;";
        queryPointer = bridge.addStaticSite(OWNER, "cudaEventQuery", "(" + p + ")I");
        recordPointer = bridge.addStaticSite(OWNER, "cudaEventRecord", "(" + p + p + ")I");
        allReducePointer = bridge.addStaticSite(OWNER, "ncclAllReduce", "(" + p + p + "JII" + p + p + ")I");
        String h = "L" + Handle.class.getName().replace('.', '/') + ";";
        queryTyped = bridge.addStaticSite(OWNER, "cudaEventQuery", "(" + h + ")I");
        recordTyped = bridge.addStaticSite(OWNER, "cudaEventRecord", "(" + h + h + ")I");
        allReduceTyped = bridge.addStaticSite(OWNER, "ncclAllReduce", "(" + p + p + "JII" + h + h + ")I");
        one(createEvent, 0, new long[] {EVENT}, 0, null, 0, null, 0, null);
        one(createStream, 0, new long[] {STREAM}, 0, null, 0, null, 0, null);
        one(initRank, 0, new long[] {COMM}, 1, null, 0, new byte[128], 0, null);
        one(record, EVENT, null, STREAM, null, 0, null, 0, null);
    }

    private static long one(int site, long w0, Object r0, long w1, Object r1, long w2, Object r2, long w3, Object r3) {
        long token = Hooks.nativeEnter(site, w0, r0, w1, r1, w2, r2, w3, r3, 0, null);
        Hooks.nativeExit(site, w0, r0, w1, r1, w2, r2, w3, r3, 0, null, 0, null, token);
        return token;
    }

    /** What the wrapper of a hot call runs: find, token, exit with the record (handle and stream slots). */
    private static long carried(int site, long handle, Object handleRef, long stream, Object streamRef) {
        Object found = Hooks.nativeFind(site, handle, handleRef, stream, streamRef);
        long token = Hooks.nativeToken(site, found);
        Hooks.nativeExitFound(site, found, handle, handleRef, stream, streamRef, 0, null, token);
        return token;
    }

    @Benchmark
    public long jniEventQuery() {
        return carried(query, EVENT, null, 0, null);
    }

    @Benchmark
    public long jniEventRecord() {
        return carried(record, EVENT, null, STREAM, null);
    }

    @Benchmark
    public long jniAllReduce() {
        return carried(allReduce, COMM, null, STREAM, null);
    }

    @Benchmark
    public long directEventQuery() {
        return carried(queryPointer, Pointer.nativeValue(event), null, 0, null);
    }

    @Benchmark
    public long directEventRecord() {
        return carried(recordPointer, Pointer.nativeValue(event), null, Pointer.nativeValue(stream), null);
    }

    @Benchmark
    public long directAllReduce() {
        return carried(allReducePointer, Pointer.nativeValue(comm), null, Pointer.nativeValue(stream), null);
    }

    @Benchmark
    public long typedEventQuery() {
        return carried(queryTyped, 0, typedEvent, 0, null);
    }

    @Benchmark
    public long typedEventRecord() {
        return carried(recordTyped, 0, typedEvent, 0, typedStream);
    }

    @Benchmark
    public long typedAllReduce() {
        return carried(allReduceTyped, 0, typedComm, 0, typedStream);
    }

    // the general hooks, as the wrapper ran them for these calls before the carried-record hooks

    @Benchmark
    public long slotsJniEventQuery() {
        return one(query, EVENT, null, 0, null, 0, null, 0, null);
    }

    @Benchmark
    public long slotsJniEventRecord() {
        return one(record, EVENT, null, STREAM, null, 0, null, 0, null);
    }

    @Benchmark
    public long slotsJniAllReduce() {
        return one(allReduce, COMM, null, STREAM, null, 0, null, 0, null);
    }

    @Benchmark
    public long slotsTypedEventQuery() {
        return one(queryTyped, 0, typedEvent, 0, null, 0, null, 0, null);
    }

    @Benchmark
    public long slotsTypedEventRecord() {
        return one(recordTyped, 0, typedEvent, 0, typedStream, 0, null, 0, null);
    }

    @Benchmark
    public long slotsTypedAllReduce() {
        return one(allReduceTyped, 0, typedComm, 0, typedStream, 0, null, 0, null);
    }

    private long tracked(NativeFunction fn, Fixed args) {
        long token = tracker.enter(fn, args);
        tracker.exit(fn, args, 0, token, "jni", null);
        return token;
    }

    @Benchmark
    public long trackerEventQuery() {
        return tracked(queryFn, queryArgs);
    }

    @Benchmark
    public long trackerEventRecord() {
        return tracked(recordFn, recordArgs);
    }

    @Benchmark
    public long trackerAllReduce() {
        return tracked(allReduceFn, allReduceArgs);
    }
}
