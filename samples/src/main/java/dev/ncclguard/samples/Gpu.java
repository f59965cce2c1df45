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

    // --- NCCL 2.28/2.29's other resources; a bridge that cannot reach one says so ---

    /** sizeof(struct ncclDevComm) of NCCL 2.29.3, the largest layout: what a bridge keeps of one. */
    int DEV_COMM_BYTES = 200;
    /** NCCL_WIN_COLL_SYMMETRIC: a window every rank registers alike. */
    int NCCL_WIN_COLL_SYMMETRIC = 1;

    /** ncclMemAlloc. */
    default long memAlloc(long bytes) {
        throw unsupported("ncclMemAlloc");
    }

    /** ncclMemFree. */
    default void memFree(long pointer) {
        throw unsupported("ncclMemFree");
    }

    /** ncclCommRegister: the registration's handle. */
    default long commRegister(long comm, long buffer, long bytes) {
        throw unsupported("ncclCommRegister");
    }

    default void commDeregister(long comm, long handle) {
        throw unsupported("ncclCommDeregister");
    }

    /** ncclCommWindowRegister: the window (ncclWindow_t). */
    default long windowRegister(long comm, long buffer, long bytes, int flags) {
        throw unsupported("ncclCommWindowRegister");
    }

    default void windowDeregister(long comm, long window) {
        throw unsupported("ncclCommWindowDeregister");
    }

    /**
     * ncclDevCommCreate with NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER's requirements: the struct NCCL
     * filled in, held as the bridge passes structs (JNA Memory, a MemorySegment, a byte[]).
     */
    default Object devCommCreate(long comm) {
        throw unsupported("ncclDevCommCreate");
    }

    default void devCommDestroy(long comm, Object devComm) {
        throw unsupported("ncclDevCommDestroy");
    }

    /** Whether {@link #devCommCreate} reaches NCCL through this bridge (JavaCPP's presets map no nccl_device/core.h). */
    default boolean reachesDeviceCommunicators() {
        return true;
    }

    /** ncclCommGetUniqueId (NCCL 2.29): the id of a grow of {@code comm}. */
    default byte[] commGetUniqueId(long comm) {
        throw unsupported("ncclCommGetUniqueId");
    }

    /**
     * ncclCommGrow (NCCL 2.29): an existing rank passes its communicator, rank -1 and the id or
     * null; a new rank passes 0, the id and its rank.
     */
    default long commGrow(long comm, int nranks, byte[] uniqueId, int rank) {
        throw unsupported("ncclCommGrow");
    }

    /** ncclCommRevoke (NCCL 2.29) with revokeFlags 0. */
    default void commRevoke(long comm) {
        throw unsupported("ncclCommRevoke");
    }

    private SampleFailure unsupported(String function) {
        return new SampleFailure(function + " is not reachable through the " + bridge() + " bridge");
    }
}
