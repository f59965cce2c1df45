package dev.ncclguard.samples;

/**
 * The NCCL and CUDA runtime calls the samples make, as one bridge makes them (JNA interface
 * mapping, JNA direct mapping, hand-written JNI, JavaCPP, FFM). Handles and device pointers are
 * addresses. Each method makes one C call (two for a copy through host memory) and throws
 * {@link SampleFailure}, naming the call and the library's error string, when it fails.
 */
public interface Gpu {
    /** ncclDataType_t ncclFloat32 and ncclRedOp_t ncclSum. */
    int NCCL_FLOAT32 = 7;
    int NCCL_SUM = 0;
    int CUDA_MEMCPY_HOST_TO_DEVICE = 1;
    int CUDA_MEMCPY_DEVICE_TO_HOST = 2;
    int UNIQUE_ID_BYTES = 128;

    /** The bridge's name, as {@code --bridge} takes it. */
    String bridge();

    /** NCCL's version code (ncclGetVersion). */
    int ncclVersionCode();

    int deviceCount();

    void setDevice(int device);

    long streamCreate();

    void streamSynchronize(long stream);

    void streamDestroy(long stream);

    long malloc(long bytes);

    void free(long pointer);

    /** Copies {@code n} floats from host memory to device memory at {@code dst}. */
    void copyToDevice(long dst, float[] src, int n);

    /** Copies {@code n} floats from device memory at {@code src} to host memory. */
    void copyToHost(float[] dst, long src, int n);

    long eventCreate();

    void eventRecord(long event, long stream);

    void eventSynchronize(long event);

    /** cudaEventQuery: true once the work before the event's last record is done, false while not ready. */
    boolean eventQuery(long event);

    void eventDestroy(long event);

    /** ncclGetUniqueId's 128 bytes. */
    byte[] uniqueId();

    long commInitRank(int nranks, byte[] uniqueId, int rank);

    /** ncclCommInitAll: one communicator per device, in device order. */
    long[] commInitAll(int[] devices);

    /** A float sum allreduce of {@code count} elements. */
    void allReduce(long send, long recv, long count, long comm, long stream);

    void commDestroy(long comm);

    void commAbort(long comm);
}
