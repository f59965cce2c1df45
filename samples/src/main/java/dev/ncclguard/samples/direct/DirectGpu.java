package dev.ncclguard.samples.direct;

import com.sun.jna.Memory;
import com.sun.jna.NativeLibrary;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.IntByReference;
import com.sun.jna.ptr.PointerByReference;
import dev.ncclguard.samples.DevCommRequirements;
import dev.ncclguard.samples.Gpu;
import dev.ncclguard.samples.SampleFailure;
import dev.ncclguard.samples.jna.NcclUniqueId;
import java.nio.file.Path;

/** The calls through JNA direct mapping: {@link DirectNccl} (static natives), {@link DirectCudart} (instance natives). */
public final class DirectGpu implements Gpu {
    private final DirectCudart cuda;
    private final NativeLibrary ncclLibrary;
    /** Whether DirectNcclResources and DirectNcclGrow are bound: at their first use, as NCCL may lack them. */
    private boolean resourcesBound;
    private boolean growBound;

    private DirectGpu(DirectCudart cuda, NativeLibrary ncclLibrary) {
        this.cuda = cuda;
        this.ncclLibrary = ncclLibrary;
    }

    /** Binds both classes to the given library files (already loaded by the caller). */
    public static DirectGpu open(Path nccl, Path cudart) {
        DirectCudart cuda = new DirectCudart(NativeLibrary.getInstance(cudart.toString()));
        NativeLibrary library = NativeLibrary.getInstance(nccl.toString());
        DirectNccl.register(library);
        return new DirectGpu(cuda, library);
    }

    private synchronized void resources() {
        if (!resourcesBound) {
            try {
                DirectNcclResources.register(ncclLibrary);
            } catch (UnsatisfiedLinkError e) {
                throw new SampleFailure("this NCCL lacks NCCL 2.28's memory and registration functions: " + e.getMessage());
            }
            resourcesBound = true;
        }
    }

    private synchronized void grow() {
        if (!growBound) {
            try {
                DirectNcclGrow.register(ncclLibrary);
            } catch (UnsatisfiedLinkError e) {
                throw new SampleFailure("this NCCL lacks NCCL 2.29's grow and revoke: " + e.getMessage());
            }
            growBound = true;
        }
    }

    private static Pointer p(long address) {
        return address == 0 ? null : new Pointer(address);
    }

    @Override
    public String bridge() {
        return "jna-direct";
    }

    @Override
    public int ncclVersionCode() {
        IntByReference code = new IntByReference();
        nccl(DirectNccl.ncclGetVersion(code), "ncclGetVersion");
        return code.getValue();
    }

    @Override
    public int deviceCount() {
        IntByReference count = new IntByReference();
        cuda(cuda.cudaGetDeviceCount(count), "cudaGetDeviceCount");
        return count.getValue();
    }

    @Override
    public void setDevice(int device) {
        cuda(cuda.cudaSetDevice(device), "cudaSetDevice");
    }

    @Override
    public long streamCreate() {
        PointerByReference ref = new PointerByReference();
        cuda(cuda.cudaStreamCreate(ref), "cudaStreamCreate");
        return Pointer.nativeValue(ref.getValue());
    }

    @Override
    public void streamSynchronize(long stream) {
        cuda(cuda.cudaStreamSynchronize(p(stream)), "cudaStreamSynchronize");
    }

    @Override
    public void streamDestroy(long stream) {
        cuda(cuda.cudaStreamDestroy(p(stream)), "cudaStreamDestroy");
    }

    @Override
    public long malloc(long bytes) {
        PointerByReference ref = new PointerByReference();
        cuda(cuda.cudaMalloc(ref, bytes), "cudaMalloc");
        return Pointer.nativeValue(ref.getValue());
    }

    @Override
    public void free(long pointer) {
        cuda(cuda.cudaFree(p(pointer)), "cudaFree");
    }

    @Override
    public void copyToDevice(long dst, float[] src, int n) {
        Memory staging = new Memory((long) n * Float.BYTES);
        staging.write(0, src, 0, n);
        cuda(cuda.cudaMemcpy(p(dst), staging, staging.size(), CUDA_MEMCPY_HOST_TO_DEVICE), "cudaMemcpy");
    }

    @Override
    public void copyToHost(float[] dst, long src, int n) {
        Memory staging = new Memory((long) n * Float.BYTES);
        cuda(cuda.cudaMemcpy(staging, p(src), staging.size(), CUDA_MEMCPY_DEVICE_TO_HOST), "cudaMemcpy");
        staging.read(0, dst, 0, n);
    }

    @Override
    public long eventCreate() {
        PointerByReference ref = new PointerByReference();
        cuda(cuda.cudaEventCreate(ref), "cudaEventCreate");
        return Pointer.nativeValue(ref.getValue());
    }

    @Override
    public void eventRecord(long event, long stream) {
        cuda(cuda.cudaEventRecord(p(event), p(stream)), "cudaEventRecord");
    }

    @Override
    public void eventSynchronize(long event) {
        cuda(cuda.cudaEventSynchronize(p(event)), "cudaEventSynchronize");
    }

    @Override
    public boolean eventQuery(long event) {
        return SampleFailure.done(cuda.cudaEventQuery(p(event)), "cudaEventQuery", cuda::cudaGetErrorString);
    }

    @Override
    public void eventDestroy(long event) {
        cuda(cuda.cudaEventDestroy(p(event)), "cudaEventDestroy");
    }

    @Override
    public byte[] uniqueId() {
        NcclUniqueId id = new NcclUniqueId();
        nccl(DirectNccl.ncclGetUniqueId(id), "ncclGetUniqueId");
        return id.internal.clone();
    }

    @Override
    public long commInitRank(int nranks, byte[] uniqueId, int rank) {
        NcclUniqueId.ByValue id = new NcclUniqueId.ByValue();
        id.internal = uniqueId.clone();
        PointerByReference ref = new PointerByReference();
        nccl(DirectNccl.ncclCommInitRank(ref, nranks, id, rank), "ncclCommInitRank");
        return Pointer.nativeValue(ref.getValue());
    }

    @Override
    public long[] commInitAll(int[] devices) {
        long[] comms = new long[devices.length];
        nccl(DirectNccl.ncclCommInitAll(comms, comms.length, devices), "ncclCommInitAll");
        return comms;
    }

    @Override
    public void allReduce(long send, long recv, long count, long comm, long stream) {
        nccl(DirectNccl.ncclAllReduce(p(send), p(recv), count, NCCL_FLOAT32, NCCL_SUM, p(comm), p(stream)),
                "ncclAllReduce");
    }

    @Override
    public void commDestroy(long comm) {
        nccl(DirectNccl.ncclCommDestroy(p(comm)), "ncclCommDestroy");
    }

    @Override
    public void commAbort(long comm) {
        nccl(DirectNccl.ncclCommAbort(p(comm)), "ncclCommAbort");
    }

    @Override
    public long memAlloc(long bytes) {
        resources();
        PointerByReference ref = new PointerByReference();
        nccl(DirectNcclResources.ncclMemAlloc(ref, bytes), "ncclMemAlloc");
        return Pointer.nativeValue(ref.getValue());
    }

    @Override
    public void memFree(long pointer) {
        resources();
        nccl(DirectNcclResources.ncclMemFree(p(pointer)), "ncclMemFree");
    }

    @Override
    public long commRegister(long comm, long buffer, long bytes) {
        resources();
        PointerByReference ref = new PointerByReference();
        nccl(DirectNcclResources.ncclCommRegister(p(comm), p(buffer), bytes, ref), "ncclCommRegister");
        return Pointer.nativeValue(ref.getValue());
    }

    @Override
    public void commDeregister(long comm, long handle) {
        resources();
        nccl(DirectNcclResources.ncclCommDeregister(p(comm), p(handle)), "ncclCommDeregister");
    }

    @Override
    public long windowRegister(long comm, long buffer, long bytes, int flags) {
        resources();
        PointerByReference ref = new PointerByReference();
        nccl(DirectNcclResources.ncclCommWindowRegister(p(comm), p(buffer), bytes, ref, flags), "ncclCommWindowRegister");
        return Pointer.nativeValue(ref.getValue());
    }

    @Override
    public void windowDeregister(long comm, long window) {
        resources();
        nccl(DirectNcclResources.ncclCommWindowDeregister(p(comm), p(window)), "ncclCommWindowDeregister");
    }

    @Override
    public Object devCommCreate(long comm) {
        resources();
        byte[] reqs = DevCommRequirements.bytes(ncclVersionCode());
        Memory requirements = new Memory(reqs.length);
        requirements.write(0, reqs, 0, reqs.length);
        Memory devComm = new Memory(DEV_COMM_BYTES);
        devComm.clear();
        nccl(DirectNcclResources.ncclDevCommCreate(p(comm), requirements, devComm), "ncclDevCommCreate");
        return devComm;
    }

    @Override
    public void devCommDestroy(long comm, Object devComm) {
        resources();
        nccl(DirectNcclResources.ncclDevCommDestroy(p(comm), (Memory) devComm), "ncclDevCommDestroy");
    }

    @Override
    public byte[] commGetUniqueId(long comm) {
        grow();
        NcclUniqueId id = new NcclUniqueId();
        nccl(DirectNcclGrow.ncclCommGetUniqueId(p(comm), id), "ncclCommGetUniqueId");
        return id.internal.clone();
    }

    @Override
    public long commGrow(long comm, int nranks, byte[] uniqueId, int rank) {
        grow();
        NcclUniqueId id = null;
        if (uniqueId != null) {
            id = new NcclUniqueId();
            id.internal = uniqueId.clone();
        }
        PointerByReference ref = new PointerByReference();
        nccl(DirectNcclGrow.ncclCommGrow(p(comm), nranks, id, rank, ref, null), "ncclCommGrow");
        return Pointer.nativeValue(ref.getValue());
    }

    @Override
    public void commRevoke(long comm) {
        grow();
        nccl(DirectNcclGrow.ncclCommRevoke(p(comm), 0), "ncclCommRevoke");
    }

    private static void nccl(int status, String call) {
        SampleFailure.check(status, call, DirectNccl::ncclGetErrorString);
    }

    private void cuda(int status, String call) {
        SampleFailure.check(status, call, cuda::cudaGetErrorString);
    }
}
