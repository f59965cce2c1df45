package dev.ncclguard.bench;

import static dev.ncclguard.bench.GpuLibraries.cuda;

import com.sun.jna.Pointer;
import com.sun.jna.ptr.PointerByReference;
import dev.ncclguard.bench.jna.NcclUniqueId;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/**
 * A handle's creation, where the agent records a new handle and (stacks=on) its creating stack.
 * Each operation also releases what it created, so the live set stays constant: the difference
 * with and without the agent is an upper bound for what the creation alone adds.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
public class Creations {
    private GpuLibraries libs;
    private final PointerByReference ref = new PointerByReference();
    private final NcclUniqueId id = new NcclUniqueId();

    @Setup(Level.Trial)
    public void open() {
        libs = GpuLibraries.load();
        cuda(libs.cudart.cudaSetDevice(0), "cudaSetDevice");
    }

    @Benchmark
    public Pointer cudaEventCreate() {
        cuda(libs.cudart.cudaEventCreate(ref), "cudaEventCreate");
        Pointer event = ref.getValue();
        cuda(libs.cudart.cudaEventDestroy(event), "cudaEventDestroy");
        return event;
    }

    /** ncclCommInitRank with nranks=1 (after ncclGetUniqueId, untracked), then ncclCommDestroy. */
    @Benchmark
    public Pointer ncclCommInitRank() {
        libs.nccl(libs.nccl.ncclGetUniqueId(id), "ncclGetUniqueId");
        libs.nccl(libs.nccl.ncclCommInitRank(ref, 1, id.copyByValue(), 0), "ncclCommInitRank");
        Pointer comm = ref.getValue();
        libs.nccl(libs.nccl.ncclCommDestroy(comm), "ncclCommDestroy");
        return comm;
    }
}
