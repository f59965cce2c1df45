package dev.ncclguard.bench;

import static dev.ncclguard.bench.GpuLibraries.cuda;

import com.sun.jna.Pointer;
import com.sun.jna.ptr.PointerByReference;
import dev.ncclguard.bench.jna.NcclUniqueId;

/**
 * What the hot-call benchmarks work on: device 0, a stream, an event recorded once, two small
 * buffers and a one-rank communicator. Created and released outside the measured code.
 */
public final class GpuSession implements AutoCloseable {
    public static final long COUNT = 256;

    public final GpuLibraries libs;
    public final Pointer stream;
    public final Pointer event;
    public final Pointer send;
    public final Pointer recv;
    public final Pointer comm;

    private GpuSession(GpuLibraries libs, Pointer stream, Pointer event, Pointer send, Pointer recv,
            Pointer comm) {
        this.libs = libs;
        this.stream = stream;
        this.event = event;
        this.send = send;
        this.recv = recv;
        this.comm = comm;
    }

    public static GpuSession open() {
        GpuLibraries libs = GpuLibraries.load();
        cuda(libs.cudart.cudaSetDevice(0), "cudaSetDevice");
        PointerByReference ref = new PointerByReference();
        cuda(libs.cudart.cudaStreamCreate(ref), "cudaStreamCreate");
        Pointer stream = ref.getValue();
        cuda(libs.cudart.cudaEventCreate(ref), "cudaEventCreate");
        Pointer event = ref.getValue();
        cuda(libs.cudart.cudaMalloc(ref, COUNT * Float.BYTES), "cudaMalloc");
        Pointer send = ref.getValue();
        cuda(libs.cudart.cudaMalloc(ref, COUNT * Float.BYTES), "cudaMalloc");
        Pointer recv = ref.getValue();
        Pointer comm = initComm(libs, ref);
        cuda(libs.cudart.cudaEventRecord(event, stream), "cudaEventRecord");
        cuda(libs.cudart.cudaEventSynchronize(event), "cudaEventSynchronize");
        return new GpuSession(libs, stream, event, send, recv, comm);
    }

    /** A communicator of one rank: NCCL's smallest, created without any other thread or process. */
    public static Pointer initComm(GpuLibraries libs, PointerByReference ref) {
        NcclUniqueId id = new NcclUniqueId();
        libs.nccl(libs.nccl.ncclGetUniqueId(id), "ncclGetUniqueId");
        libs.nccl(libs.nccl.ncclCommInitRank(ref, 1, id.copyByValue(), 0), "ncclCommInitRank");
        return ref.getValue();
    }

    /** Waits for the work enqueued so far, so queues do not grow from one iteration to the next. */
    public void synchronize() {
        cuda(libs.cudart.cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    }

    @Override
    public void close() {
        synchronize();
        libs.nccl(libs.nccl.ncclCommDestroy(comm), "ncclCommDestroy");
        cuda(libs.cudart.cudaEventDestroy(event), "cudaEventDestroy");
        cuda(libs.cudart.cudaFree(send), "cudaFree");
        cuda(libs.cudart.cudaFree(recv), "cudaFree");
        cuda(libs.cudart.cudaStreamDestroy(stream), "cudaStreamDestroy");
    }
}
