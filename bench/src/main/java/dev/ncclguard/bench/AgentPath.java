package dev.ncclguard.bench;

import com.sun.jna.Memory;
import com.sun.jna.NativeLibrary;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.PointerByReference;
import dev.ncclguard.bootstrap.Hooks;
import dev.ncclguard.bootstrap.state.HookState;
import dev.ncclguard.bridge.jna.JnaBridge;
import dev.ncclguard.track.Tracker;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/**
 * The agent's own work per call, without the native call and without JNA: what the code woven
 * into {@code Function.invoke} runs (the four {@link Hooks} calls) on the arguments JNA hands it. A diagnostic
 * for the hot path with nanosecond resolution, which the whole-call comparison of
 * {@link JnaInterfaceCalls} cannot give on a noisy machine. Needs the agent jar on the class path
 * (not as an agent): {@code java -cp ncclguard-bench.jar:ncclguard-agent.jar org.openjdk.jmh.Main AgentPath}.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class AgentPath {
    private static final Integer SUCCESS = 0;
    private static final long EVENT = 0x7f00_1000_0000L;
    private static final long STREAM = 0x7f00_2000_0000L;
    private static final long COMM = 0x7f00_3000_0000L;

    @Param({"off", "on"})
    public String stacks;

    private Object library;
    // distinct instances, as JNA's function names are: the catalog compares contents
    private final String recordName = new String("cudaEventRecord");
    private final String queryName = new String("cudaEventQuery");
    private final String allReduceName = new String("ncclAllReduce");
    private final String untrackedName = new String("cudaGetDevice");
    private final String createEventName = new String("cudaEventCreate");
    private final String destroyEventName = new String("cudaEventDestroy");
    private final String initRankName = new String("ncclCommInitRank");
    private final String destroyCommName = new String("ncclCommDestroy");
    private Object[] createEventArgs;
    private Object[] destroyEventArgs;
    private Object[] initRankArgs;
    private Object[] destroyCommArgs;
    private Object[] recordArgs;
    private Object[] queryArgs;
    private Object[] allReduceArgs;

    @Setup
    public void setUp() {
        String emu = System.getProperty(GpuLibraries.EMU_PROPERTY, "emulator/target/emu");
        library = NativeLibrary.getInstance(Path.of(emu, "libcudart.so.13").toAbsolutePath().toString());
        HookState.jna = new JnaBridge(new Tracker(new Tracker.Config("on".equals(stacks), System::currentTimeMillis)));
        call("cudaEventCreate", new Object[] {out(EVENT)});
        call("cudaStreamCreate", new Object[] {out(STREAM)});
        Memory id = new Memory(128);
        id.clear();
        call("ncclCommInitRank", new Object[] {out(COMM), 1, id, 0});
        Pointer event = new Pointer(EVENT);
        Pointer stream = new Pointer(STREAM);
        recordArgs = new Object[] {event, stream};
        queryArgs = new Object[] {event};
        allReduceArgs = new Object[] {new Pointer(0x1000), new Pointer(0x2000), 256L, 7, 0, new Pointer(COMM), stream};
        call("cudaEventRecord", recordArgs);
        createEventArgs = new Object[] {out(EVENT + 0x100)};
        destroyEventArgs = new Object[] {new Pointer(EVENT + 0x100)};
        initRankArgs = new Object[] {out(COMM + 0x100), 1, id, 0};
        destroyCommArgs = new Object[] {new Pointer(COMM + 0x100)};
    }

    private static PointerByReference out(long handle) {
        PointerByReference ref = new PointerByReference();
        ref.setValue(new Pointer(handle));
        return ref;
    }

    private void call(String symbol, Object[] args) {
        if (Hooks.jnaLookup(symbol) == null) {
            throw new IllegalStateException(symbol + " is not tracked");
        }
        advice(symbol, args);
    }

    /** As the woven code does it, with no branch: lookup, find and enter before the call, exit after. */
    private long advice(String symbol, Object[] args) {
        Object fn = Hooks.jnaLookup(symbol);
        Object found = Hooks.jnaFind(fn, args);
        long token = Hooks.jnaEnter(fn, found, args);
        Hooks.jnaExit(SUCCESS, fn, found, library, args, token);
        return token;
    }

    @Benchmark
    public long cudaEventRecord() {
        return advice(recordName, recordArgs);
    }

    @Benchmark
    public long cudaEventQuery() {
        return advice(queryName, queryArgs);
    }

    @Benchmark
    public long ncclAllReduce() {
        return advice(allReduceName, allReduceArgs);
    }

    /** cudaEventCreate then cudaEventDestroy: a new record (and its stack, stacks=on), then its end. */
    @Benchmark
    public long cudaEventCreate() {
        advice(createEventName, createEventArgs);
        return advice(destroyEventName, destroyEventArgs);
    }

    /** ncclCommInitRank (nranks=1) then ncclCommDestroy: the unique id is read and hashed too. */
    @Benchmark
    public long ncclCommInitRank() {
        advice(initRankName, initRankArgs);
        return advice(destroyCommName, destroyCommArgs);
    }

    @Benchmark
    public long untracked() {
        return advice(untrackedName, queryArgs);
    }
}
