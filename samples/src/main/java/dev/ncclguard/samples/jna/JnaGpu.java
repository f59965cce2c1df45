package dev.ncclguard.samples.jna;

import com.sun.jna.Function;
import com.sun.jna.Memory;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.IntByReference;
import com.sun.jna.ptr.PointerByReference;
import dev.ncclguard.samples.DevCommRequirements;
import dev.ncclguard.samples.Gpu;
import dev.ncclguard.samples.SampleFailure;

/** The calls through JNA interface mapping ({@code Native.load(path, Nccl.class)}). */
public final class JnaGpu implements Gpu {
    private final Nccl nccl;
    private final Cudart cuda;

    public JnaGpu(Nccl nccl, Cudart cuda) {
        this.nccl = nccl;
        this.cuda = cuda;
        sizeUniqueIdType();
    }

    /**
     * Has libffi size ncclUniqueId's by-value type here, before the ranks' threads make their first
     * ncclCommInitRank at once. JNA prepares each interface-mapped call with libffi, which sizes a
     * by-value struct's type (one per class, shared) at its first use, in place, element by element
     * and unguarded: a second thread's call could read it part-sized, take the struct for one that
     * fits in registers and pass the rank in the wrong one (seen: "invalid rank 35 for nranks 2").
     * getpid takes no argument; the one passed here is the caller's to place and clear away.
     */
    private static void sizeUniqueIdType() {
        Function.getFunction("c", "getpid").invokeInt(new Object[] {new NcclUniqueId.ByValue()});
    }

    @Override
    public String bridge() {
        return "jna";
    }

    private static Pointer p(long address) {
        return address == 0 ? null : new Pointer(address);
    }

    @Override
    public int ncclVersionCode() {
        IntByReference code = new IntByReference();
        nccl(nccl.ncclGetVersion(code), "ncclGetVersion");
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
        cuda(cuda.cudaMemcpy(p(dst), staging, staging.size(), Cudart.cudaMemcpyHostToDevice), "cudaMemcpy");
    }

    @Override
    public void copyToHost(float[] dst, long src, int n) {
        Memory staging = new Memory((long) n * Float.BYTES);
        cuda(cuda.cudaMemcpy(staging, p(src), staging.size(), Cudart.cudaMemcpyDeviceToHost), "cudaMemcpy");
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
        nccl(nccl.ncclGetUniqueId(id), "ncclGetUniqueId");
        return id.internal.clone();
    }

    @Override
    public long commInitRank(int nranks, byte[] uniqueId, int rank) {
        NcclUniqueId.ByValue id = new NcclUniqueId.ByValue();
        id.internal = uniqueId.clone();
        PointerByReference ref = new PointerByReference();
        nccl(nccl.ncclCommInitRank(ref, nranks, id, rank), "ncclCommInitRank");
        return Pointer.nativeValue(ref.getValue());
    }

    @Override
    public long[] commInitAll(int[] devices) {
        Pointer[] comms = new Pointer[devices.length];
        nccl(nccl.ncclCommInitAll(comms, comms.length, devices), "ncclCommInitAll");
        long[] handles = new long[comms.length];
        for (int i = 0; i < comms.length; i++) {
            handles[i] = Pointer.nativeValue(comms[i]);
        }
        return handles;
    }

    @Override
    public void allReduce(long send, long recv, long count, long comm, long stream) {
        nccl(nccl.ncclAllReduce(p(send), p(recv), count, Nccl.ncclFloat32, Nccl.ncclSum, p(comm), p(stream)),
                "ncclAllReduce");
    }

    @Override
    public void commDestroy(long comm) {
        nccl(nccl.ncclCommDestroy(p(comm)), "ncclCommDestroy");
    }

    @Override
    public void commAbort(long comm) {
        nccl(nccl.ncclCommAbort(p(comm)), "ncclCommAbort");
    }

    @Override
    public long memAlloc(long bytes) {
        PointerByReference ref = new PointerByReference();
        nccl(nccl.ncclMemAlloc(ref, bytes), "ncclMemAlloc");
        return Pointer.nativeValue(ref.getValue());
    }

    @Override
    public void memFree(long pointer) {
        nccl(nccl.ncclMemFree(p(pointer)), "ncclMemFree");
    }

    @Override
    public long commRegister(long comm, long buffer, long bytes) {
        PointerByReference ref = new PointerByReference();
        nccl(nccl.ncclCommRegister(p(comm), p(buffer), bytes, ref), "ncclCommRegister");
        return Pointer.nativeValue(ref.getValue());
    }

    @Override
    public void commDeregister(long comm, long handle) {
        nccl(nccl.ncclCommDeregister(p(comm), p(handle)), "ncclCommDeregister");
    }

    @Override
    public long windowRegister(long comm, long buffer, long bytes, int flags) {
        PointerByReference ref = new PointerByReference();
        nccl(nccl.ncclCommWindowRegister(p(comm), p(buffer), bytes, ref, flags), "ncclCommWindowRegister");
        return Pointer.nativeValue(ref.getValue());
    }

    @Override
    public void windowDeregister(long comm, long window) {
        nccl(nccl.ncclCommWindowDeregister(p(comm), p(window)), "ncclCommWindowDeregister");
    }

    @Override
    public Object devCommCreate(long comm) {
        byte[] reqs = DevCommRequirements.bytes(ncclVersionCode());
        Memory requirements = new Memory(reqs.length);
        requirements.write(0, reqs, 0, reqs.length);
        Memory devComm = new Memory(DEV_COMM_BYTES);
        devComm.clear();
        nccl(nccl.ncclDevCommCreate(p(comm), requirements, devComm), "ncclDevCommCreate");
        return devComm;
    }

    @Override
    public void devCommDestroy(long comm, Object devComm) {
        nccl(nccl.ncclDevCommDestroy(p(comm), (Memory) devComm), "ncclDevCommDestroy");
    }

    @Override
    public byte[] commGetUniqueId(long comm) {
        NcclUniqueId id = new NcclUniqueId();
        nccl(nccl.ncclCommGetUniqueId(p(comm), id), "ncclCommGetUniqueId");
        return id.internal.clone();
    }

    @Override
    public long commGrow(long comm, int nranks, byte[] uniqueId, int rank) {
        NcclUniqueId id = null;
        if (uniqueId != null) {
            id = new NcclUniqueId();
            id.internal = uniqueId.clone();
        }
        PointerByReference ref = new PointerByReference();
        nccl(nccl.ncclCommGrow(p(comm), nranks, id, rank, ref, null), "ncclCommGrow");
        return Pointer.nativeValue(ref.getValue());
    }

    @Override
    public void commRevoke(long comm) {
        nccl(nccl.ncclCommRevoke(p(comm), 0), "ncclCommRevoke");
    }

    private void nccl(int status, String call) {
        SampleFailure.check(status, call, nccl::ncclGetErrorString);
    }

    private void cuda(int status, String call) {
        SampleFailure.check(status, call, cuda::cudaGetErrorString);
    }
}
