package dev.ncclguard.samples.jni;

import dev.ncclguard.samples.Gpu;
import dev.ncclguard.samples.SampleFailure;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;

/**
 * The calls through the samples' hand-written JNI library. The library links libnccl.so.2 and
 * libcudart.so.13 by soname; the caller has loaded the files it chose under those sonames first
 * (GpuLibraries), so the dynamic loader binds the JNI library to those and looks no further.
 */
public final class JniGpu implements Gpu {
    static final String LIBRARY = "dev/ncclguard/samples/jni/linux-x86_64/libncclguard-samples-jni.so";
    private static boolean loaded;

    private final boolean customNames;

    private JniGpu(boolean customNames) {
        this.customNames = customNames;
    }

    /** @param customNames communicators through {@link Comms} (other names, a bindings file) */
    public static JniGpu open(boolean customNames) {
        loadLibrary();
        return new JniGpu(customNames);
    }

    /** Extracts the JNI library from the jar (or class folder) and loads it, once. */
    static synchronized void loadLibrary() {
        if (loaded) {
            return;
        }
        try (InputStream in = JniGpu.class.getClassLoader().getResourceAsStream(LIBRARY)) {
            if (in == null) {
                throw new SampleFailure("the samples were built without their JNI library (" + LIBRARY + ")");
            }
            Path file = Files.createTempFile("ncclguard-samples-jni", ".so");
            file.toFile().deleteOnExit();
            Files.copy(in, file, StandardCopyOption.REPLACE_EXISTING);
            System.load(file.toString());
            loaded = true;
        } catch (IOException e) {
            throw new SampleFailure("cannot extract the JNI library: " + e);
        }
    }

    @Override
    public String bridge() {
        return customNames ? "jni-bindings" : "jni";
    }

    @Override
    public int ncclVersionCode() {
        int[] code = new int[1];
        nccl(JniNccl.ncclGetVersion(code), "ncclGetVersion");
        return code[0];
    }

    @Override
    public int deviceCount() {
        int[] count = new int[1];
        cuda(JniCudart.cudaGetDeviceCount(count), "cudaGetDeviceCount");
        return count[0];
    }

    @Override
    public void setDevice(int device) {
        cuda(JniCudart.cudaSetDevice(device), "cudaSetDevice");
    }

    @Override
    public long streamCreate() {
        long[] out = new long[1];
        cuda(JniCudart.cudaStreamCreate(out), "cudaStreamCreate");
        return out[0];
    }

    @Override
    public void streamSynchronize(long stream) {
        cuda(JniCudart.cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    }

    @Override
    public void streamDestroy(long stream) {
        cuda(JniCudart.cudaStreamDestroy(stream), "cudaStreamDestroy");
    }

    @Override
    public long malloc(long bytes) {
        long[] out = new long[1];
        cuda(JniCudart.cudaMalloc(out, bytes), "cudaMalloc");
        return out[0];
    }

    @Override
    public void free(long pointer) {
        cuda(JniCudart.cudaFree(pointer), "cudaFree");
    }

    @Override
    public void copyToDevice(long dst, float[] src, int n) {
        cuda(JniCudart.copyToDevice(dst, src, n), "cudaMemcpy");
    }

    @Override
    public void copyToHost(float[] dst, long src, int n) {
        cuda(JniCudart.copyToHost(dst, src, n), "cudaMemcpy");
    }

    @Override
    public long eventCreate() {
        long[] out = new long[1];
        cuda(JniCudart.cudaEventCreate(out), "cudaEventCreate");
        return out[0];
    }

    @Override
    public void eventRecord(long event, long stream) {
        cuda(JniCudart.cudaEventRecord(event, stream), "cudaEventRecord");
    }

    @Override
    public void eventSynchronize(long event) {
        cuda(JniCudart.cudaEventSynchronize(event), "cudaEventSynchronize");
    }

    @Override
    public boolean eventQuery(long event) {
        return SampleFailure.done(JniCudart.cudaEventQuery(event), "cudaEventQuery", JniCudart::cudaGetErrorString);
    }

    @Override
    public void eventDestroy(long event) {
        cuda(JniCudart.cudaEventDestroy(event), "cudaEventDestroy");
    }

    @Override
    public byte[] uniqueId() {
        byte[] id = new byte[UNIQUE_ID_BYTES];
        nccl(JniNccl.ncclGetUniqueId(id), "ncclGetUniqueId");
        return id;
    }

    @Override
    public long commInitRank(int nranks, byte[] uniqueId, int rank) {
        if (customNames) {
            try {
                return Comms.createComm(nranks, uniqueId, rank);
            } catch (IllegalStateException e) {
                throw new SampleFailure(e.getMessage());
            }
        }
        long[] out = new long[1];
        nccl(JniNccl.ncclCommInitRank(out, nranks, uniqueId, rank), "ncclCommInitRank");
        return out[0];
    }

    @Override
    public long[] commInitAll(int[] devices) {
        long[] comms = new long[devices.length];
        nccl(JniNccl.ncclCommInitAll(comms, comms.length, devices), "ncclCommInitAll");
        return comms;
    }

    @Override
    public void allReduce(long send, long recv, long count, long comm, long stream) {
        nccl(JniNccl.ncclAllReduce(send, recv, count, NCCL_FLOAT32, NCCL_SUM, comm, stream), "ncclAllReduce");
    }

    @Override
    public void commDestroy(long comm) {
        nccl(customNames ? Comms.destroyComm(comm) : JniNccl.ncclCommDestroy(comm), "ncclCommDestroy");
    }

    @Override
    public void commAbort(long comm) {
        nccl(JniNccl.ncclCommAbort(comm), "ncclCommAbort");
    }

    @Override
    public long memAlloc(long bytes) {
        if (customNames) {
            return call(() -> Comms.allocate(bytes), "ncclMemAlloc");
        }
        long[] out = new long[1];
        nccl(call(() -> JniNccl.ncclMemAlloc(out, bytes), "ncclMemAlloc"), "ncclMemAlloc");
        return out[0];
    }

    @Override
    public void memFree(long pointer) {
        nccl(call(() -> customNames ? Comms.release(pointer) : JniNccl.ncclMemFree(pointer), "ncclMemFree"),
                "ncclMemFree");
    }

    @Override
    public long commRegister(long comm, long buffer, long bytes) {
        if (customNames) {
            return call(() -> Comms.register(comm, buffer, bytes), "ncclCommRegister");
        }
        long[] out = new long[1];
        nccl(call(() -> JniNccl.ncclCommRegister(comm, buffer, bytes, out), "ncclCommRegister"), "ncclCommRegister");
        return out[0];
    }

    @Override
    public void commDeregister(long comm, long handle) {
        nccl(call(() -> customNames ? Comms.unregister(comm, handle) : JniNccl.ncclCommDeregister(comm, handle),
                "ncclCommDeregister"), "ncclCommDeregister");
    }

    @Override
    public long windowRegister(long comm, long buffer, long bytes, int flags) {
        long[] out = new long[1];
        nccl(call(() -> JniNccl.ncclCommWindowRegister(comm, buffer, bytes, out, flags), "ncclCommWindowRegister"),
                "ncclCommWindowRegister");
        return out[0];
    }

    @Override
    public void windowDeregister(long comm, long window) {
        nccl(call(() -> JniNccl.ncclCommWindowDeregister(comm, window), "ncclCommWindowDeregister"),
                "ncclCommWindowDeregister");
    }

    @Override
    public Object devCommCreate(long comm) {
        byte[] reqs = dev.ncclguard.samples.DevCommRequirements.bytes(ncclVersionCode());
        byte[] devComm = new byte[DEV_COMM_BYTES];
        nccl(call(() -> JniNccl.ncclDevCommCreate(comm, reqs, devComm), "ncclDevCommCreate"), "ncclDevCommCreate");
        return devComm;
    }

    @Override
    public void devCommDestroy(long comm, Object devComm) {
        nccl(call(() -> JniNccl.ncclDevCommDestroy(comm, (byte[]) devComm), "ncclDevCommDestroy"), "ncclDevCommDestroy");
    }

    @Override
    public byte[] commGetUniqueId(long comm) {
        byte[] id = new byte[UNIQUE_ID_BYTES];
        nccl(call(() -> JniNccl.ncclCommGetUniqueId(comm, id), "ncclCommGetUniqueId"), "ncclCommGetUniqueId");
        return id;
    }

    @Override
    public long commGrow(long comm, int nranks, byte[] uniqueId, int rank) {
        long[] out = new long[1];
        nccl(call(() -> JniNccl.ncclCommGrow(comm, nranks, uniqueId, rank, out, 0L), "ncclCommGrow"), "ncclCommGrow");
        return out[0];
    }

    @Override
    public void commRevoke(long comm) {
        nccl(call(() -> JniNccl.ncclCommRevoke(comm, 0), "ncclCommRevoke"), "ncclCommRevoke");
    }

    /** A call of a function NCCL may lack: the JNI library throws UnsupportedOperationException then. */
    private static <T> T call(java.util.function.Supplier<T> c, String function) {
        try {
            return c.get();
        } catch (UnsupportedOperationException | IllegalStateException e) {
            throw new SampleFailure(function + ": " + e.getMessage());
        }
    }

    private static void nccl(int status, String call) {
        SampleFailure.check(status, call, JniNccl::ncclGetErrorString);
    }

    private static void cuda(int status, String call) {
        SampleFailure.check(status, call, JniCudart::cudaGetErrorString);
    }
}
