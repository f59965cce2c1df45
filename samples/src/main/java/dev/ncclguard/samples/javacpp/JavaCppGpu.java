package dev.ncclguard.samples.javacpp;

import static org.bytedeco.cuda.global.cudart.cudaEventCreate;
import static org.bytedeco.cuda.global.cudart.cudaEventDestroy;
import static org.bytedeco.cuda.global.cudart.cudaEventQuery;
import static org.bytedeco.cuda.global.cudart.cudaEventRecord;
import static org.bytedeco.cuda.global.cudart.cudaEventSynchronize;
import static org.bytedeco.cuda.global.cudart.cudaFree;
import static org.bytedeco.cuda.global.cudart.cudaGetDeviceCount;
import static org.bytedeco.cuda.global.cudart.cudaGetErrorString;
import static org.bytedeco.cuda.global.cudart.cudaMalloc;
import static org.bytedeco.cuda.global.cudart.cudaMemcpy;
import static org.bytedeco.cuda.global.cudart.cudaSetDevice;
import static org.bytedeco.cuda.global.cudart.cudaStreamCreate;
import static org.bytedeco.cuda.global.cudart.cudaStreamDestroy;
import static org.bytedeco.cuda.global.cudart.cudaStreamSynchronize;
import static org.bytedeco.cuda.global.nccl.ncclAllReduce;
import static org.bytedeco.cuda.global.nccl.ncclCommAbort;
import static org.bytedeco.cuda.global.nccl.ncclCommDestroy;
import static org.bytedeco.cuda.global.nccl.ncclCommInitAll;
import static org.bytedeco.cuda.global.nccl.ncclCommInitRank;
import static org.bytedeco.cuda.global.nccl.ncclGetErrorString;
import static org.bytedeco.cuda.global.nccl.ncclGetUniqueId;
import static org.bytedeco.cuda.global.nccl.ncclGetVersion;
import static org.bytedeco.cuda.global.nccl.ncclCommDeregister;
import static org.bytedeco.cuda.global.nccl.ncclCommGetUniqueId;
import static org.bytedeco.cuda.global.nccl.ncclCommGrow;
import static org.bytedeco.cuda.global.nccl.ncclCommRegister;
import static org.bytedeco.cuda.global.nccl.ncclCommRevoke;
import static org.bytedeco.cuda.global.nccl.ncclCommWindowDeregister;
import static org.bytedeco.cuda.global.nccl.ncclCommWindowRegister;
import static org.bytedeco.cuda.global.nccl.ncclMemAlloc;
import static org.bytedeco.cuda.global.nccl.ncclMemFree;

import dev.ncclguard.samples.Gpu;
import dev.ncclguard.samples.SampleFailure;
import java.nio.file.Path;
import org.bytedeco.cuda.cudart.CUevent_st;
import org.bytedeco.cuda.cudart.CUstream_st;
import org.bytedeco.cuda.nccl.ncclComm;
import org.bytedeco.cuda.nccl.ncclConfig_t;
import org.bytedeco.cuda.nccl.ncclUniqueId;
import org.bytedeco.cuda.nccl.ncclWindow_vidmem;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.FloatPointer;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.javacpp.PointerPointer;

/**
 * The calls through JavaCPP's CUDA presets (org.bytedeco:cuda): org.bytedeco.cuda.global.nccl and
 * .cudart, whose static native methods are named as the C functions; handles are Pointer objects
 * (ncclComm, CUstream_st, CUevent_st), out-parameters such objects filled in place. JavaCPP loads
 * its JNI libraries, which link libnccl.so.2, libcudart.so.13 and libcuda.so.1 by soname: the
 * caller loaded the files it chose under those sonames first, so they bind to those.
 */
public final class JavaCppGpu implements Gpu {
    private JavaCppGpu() {
    }

    public static JavaCppGpu open(Path nccl, Path cudart) {
        return new JavaCppGpu();
    }

    /** A JavaCPP pointer at a given address, the way JavaCPP hands one back. */
    private static final class Address extends Pointer {
        Address(long address) {
            this.address = address;
        }
    }

    private static ncclComm comm(long address) {
        return new ncclComm(new Address(address));
    }

    private static CUstream_st stream(long address) {
        return new CUstream_st(new Address(address));
    }

    private static CUevent_st event(long address) {
        return new CUevent_st(new Address(address));
    }

    @Override
    public String bridge() {
        return "javacpp";
    }

    @Override
    public int ncclVersionCode() {
        int[] code = new int[1];
        nccl(ncclGetVersion(code), "ncclGetVersion");
        return code[0];
    }

    @Override
    public int deviceCount() {
        int[] count = new int[1];
        cuda(cudaGetDeviceCount(count), "cudaGetDeviceCount");
        return count[0];
    }

    @Override
    public void setDevice(int device) {
        cuda(cudaSetDevice(device), "cudaSetDevice");
    }

    @Override
    public long streamCreate() {
        CUstream_st stream = new CUstream_st();
        cuda(cudaStreamCreate(stream), "cudaStreamCreate");
        return stream.address();
    }

    @Override
    public void streamSynchronize(long stream) {
        cuda(cudaStreamSynchronize(stream(stream)), "cudaStreamSynchronize");
    }

    @Override
    public void streamDestroy(long stream) {
        cuda(cudaStreamDestroy(stream(stream)), "cudaStreamDestroy");
    }

    @Override
    public long malloc(long bytes) {
        Pointer p = new Pointer();
        cuda(cudaMalloc(p, bytes), "cudaMalloc");
        return p.address();
    }

    @Override
    public void free(long pointer) {
        cuda(cudaFree(new Address(pointer)), "cudaFree");
    }

    @Override
    public void copyToDevice(long dst, float[] src, int n) {
        try (FloatPointer host = new FloatPointer(src)) {
            cuda(cudaMemcpy(new Address(dst), host, (long) n * Float.BYTES, CUDA_MEMCPY_HOST_TO_DEVICE), "cudaMemcpy");
        }
    }

    @Override
    public void copyToHost(float[] dst, long src, int n) {
        try (FloatPointer host = new FloatPointer(n)) {
            cuda(cudaMemcpy(host, new Address(src), (long) n * Float.BYTES, CUDA_MEMCPY_DEVICE_TO_HOST), "cudaMemcpy");
            host.get(dst, 0, n);
        }
    }

    @Override
    public long eventCreate() {
        CUevent_st event = new CUevent_st();
        cuda(cudaEventCreate(event), "cudaEventCreate");
        return event.address();
    }

    @Override
    public void eventRecord(long event, long stream) {
        cuda(cudaEventRecord(event(event), stream(stream)), "cudaEventRecord");
    }

    @Override
    public void eventSynchronize(long event) {
        cuda(cudaEventSynchronize(event(event)), "cudaEventSynchronize");
    }

    @Override
    public boolean eventQuery(long event) {
        return SampleFailure.done(cudaEventQuery(event(event)), "cudaEventQuery", s -> text(cudaGetErrorString(s)));
    }

    @Override
    public void eventDestroy(long event) {
        cuda(cudaEventDestroy(event(event)), "cudaEventDestroy");
    }

    @Override
    public byte[] uniqueId() {
        ncclUniqueId id = new ncclUniqueId();
        nccl(ncclGetUniqueId(id), "ncclGetUniqueId");
        byte[] bytes = new byte[UNIQUE_ID_BYTES];
        id.internal().get(bytes);
        return bytes;
    }

    @Override
    public long commInitRank(int nranks, byte[] uniqueId, int rank) {
        ncclUniqueId id = new ncclUniqueId();
        id.internal().put(uniqueId, 0, UNIQUE_ID_BYTES);
        ncclComm comm = new ncclComm();
        nccl(ncclCommInitRank(comm, nranks, id, rank), "ncclCommInitRank");
        return comm.address();
    }

    @Override
    public long[] commInitAll(int[] devices) {
        try (PointerPointer<ncclComm> comms = new PointerPointer<>(devices.length)) {
            nccl(ncclCommInitAll(comms, devices.length, devices), "ncclCommInitAll");
            long[] handles = new long[devices.length];
            for (int i = 0; i < handles.length; i++) {
                handles[i] = comms.get(i).address();
            }
            return handles;
        }
    }

    @Override
    public void allReduce(long send, long recv, long count, long comm, long stream) {
        nccl(ncclAllReduce(new Address(send), new Address(recv), count, NCCL_FLOAT32, NCCL_SUM, comm(comm),
                stream(stream)), "ncclAllReduce");
    }

    @Override
    public void commDestroy(long comm) {
        nccl(ncclCommDestroy(comm(comm)), "ncclCommDestroy");
    }

    @Override
    public void commAbort(long comm) {
        nccl(ncclCommAbort(comm(comm)), "ncclCommAbort");
    }

    // NCCL 2.28/2.29's other resources, as the presets map them: out-parameters are Pointer objects
    // JavaCPP fills in place (@ByPtrPtr); the presets map no device communicator (nccl_device/core.h)

    @Override
    public long memAlloc(long bytes) {
        Pointer p = new Pointer();
        nccl(ncclMemAlloc(p, bytes), "ncclMemAlloc");
        return p.address();
    }

    @Override
    public void memFree(long pointer) {
        nccl(ncclMemFree(new Address(pointer)), "ncclMemFree");
    }

    @Override
    public long commRegister(long comm, long buffer, long bytes) {
        Pointer handle = new Pointer();
        nccl(ncclCommRegister(comm(comm), new Address(buffer), bytes, handle), "ncclCommRegister");
        return handle.address();
    }

    @Override
    public void commDeregister(long comm, long handle) {
        nccl(ncclCommDeregister(comm(comm), new Address(handle)), "ncclCommDeregister");
    }

    @Override
    public long windowRegister(long comm, long buffer, long bytes, int flags) {
        ncclWindow_vidmem win = new ncclWindow_vidmem();
        nccl(ncclCommWindowRegister(comm(comm), new Address(buffer), bytes, win, flags), "ncclCommWindowRegister");
        return win.address();
    }

    @Override
    public void windowDeregister(long comm, long window) {
        nccl(ncclCommWindowDeregister(comm(comm), new ncclWindow_vidmem(new Address(window))), "ncclCommWindowDeregister");
    }

    @Override
    public byte[] commGetUniqueId(long comm) {
        ncclUniqueId id = new ncclUniqueId();
        nccl(ncclCommGetUniqueId(comm(comm), id), "ncclCommGetUniqueId");
        byte[] bytes = new byte[UNIQUE_ID_BYTES];
        id.internal().get(bytes);
        return bytes;
    }

    @Override
    public long commGrow(long comm, int nranks, byte[] uniqueId, int rank) {
        ncclUniqueId id = null;
        if (uniqueId != null) {
            id = new ncclUniqueId();
            id.internal().put(uniqueId, 0, UNIQUE_ID_BYTES);
        }
        ncclComm grown = new ncclComm();
        nccl(ncclCommGrow(comm == 0 ? null : comm(comm), nranks, id, rank, grown, (ncclConfig_t) null), "ncclCommGrow");
        return grown.address();
    }

    @Override
    public boolean reachesDeviceCommunicators() {
        return false;
    }

    @Override
    public void commRevoke(long comm) {
        nccl(ncclCommRevoke(comm(comm), 0), "ncclCommRevoke");
    }

    private static void nccl(int status, String call) {
        SampleFailure.check(status, call, s -> text(ncclGetErrorString(s)));
    }

    private static void cuda(int status, String call) {
        SampleFailure.check(status, call, s -> text(cudaGetErrorString(s)));
    }

    private static String text(BytePointer text) {
        return text == null ? "?" : text.getString();
    }
}
