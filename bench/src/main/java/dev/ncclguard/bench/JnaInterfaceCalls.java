package dev.ncclguard.bench;

import com.sun.jna.ptr.IntByReference;
import dev.ncclguard.bench.jna.Nccl;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * One native call per operation through JNA interface mapping: the agent's hot path (calls it
 * tracks, on handles it already knows) and calls it does not track. {@link Compare} runs the same
 * code in forks with and without the agent.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class JnaInterfaceCalls {
    private GpuSession gpu;
    private final IntByReference intOut = new IntByReference();

    @Setup(Level.Trial)
    public void open() {
        gpu = GpuSession.open();
    }

    @TearDown(Level.Iteration)
    public void drain() {
        gpu.synchronize();
    }

    @TearDown(Level.Trial)
    public void close() {
        gpu.close();
    }

    // tracked: the calls a training loop makes at every step

    @Benchmark
    public int cudaEventRecord() {
        return gpu.libs.cudart.cudaEventRecord(gpu.event, gpu.stream);
    }

    @Benchmark
    public int cudaEventQuery() {
        return gpu.libs.cudart.cudaEventQuery(gpu.event);
    }

    @Benchmark
    public int ncclAllReduce() {
        return gpu.libs.nccl.ncclAllReduce(gpu.send, gpu.recv, GpuSession.COUNT, Nccl.ncclFloat32, Nccl.ncclSum,
                gpu.comm, gpu.stream);
    }

    // untracked: other functions of the same libraries, and of another library

    @Benchmark
    public int cudaGetDevice() {
        return gpu.libs.cudart.cudaGetDevice(intOut);
    }

    @Benchmark
    public int ncclGetVersion() {
        return gpu.libs.nccl.ncclGetVersion(intOut);
    }

    @Benchmark
    public int getpid() {
        return gpu.libs.libc.getpid();
    }
}
