package dev.ncclguard.samples.jni;

/** nccl.h by hand-written JNI (samples/src/main/c), named as the C functions; handles are longs. */
public final class JniNccl {
    private JniNccl() {
    }

    public static native int ncclGetVersion(int[] version);

    public static native String ncclGetErrorString(int result);

    public static native int ncclGetUniqueId(byte[] uniqueId);

    /**
     * Writes the communicator into {@code comm[0]}. Throws IllegalArgumentException unless
     * {@code commId} holds 128 bytes, NullPointerException for a null array.
     */
    public static native int ncclCommInitRank(long[] comm, int nranks, byte[] commId, int rank);

    public static native int ncclCommInitAll(long[] comms, int ndev, int[] devlist);

    public static native int ncclCommDestroy(long comm);

    public static native int ncclCommAbort(long comm);

    public static native int ncclAllReduce(long sendbuff, long recvbuff, long count, int datatype, int op,
                                           long comm, long stream);

    public static native int ncclGroupStart();

    public static native int ncclGroupEnd();

    // NCCL 2.28's memory, registrations, windows and device communicators, NCCL 2.29's grow and
    // revoke: each throws UnsupportedOperationException when the loaded libnccl.so.2 lacks it

    public static native int ncclMemAlloc(long[] ptr, long size);

    public static native int ncclMemFree(long ptr);

    public static native int ncclCommRegister(long comm, long buff, long size, long[] handle);

    public static native int ncclCommDeregister(long comm, long handle);

    public static native int ncclCommWindowRegister(long comm, long buff, long size, long[] win, int winFlags);

    public static native int ncclCommWindowDeregister(long comm, long win);

    /** {@code reqs}: ncclDevCommRequirements' bytes (at most 72); {@code outDevComm}: 200 bytes, the struct NCCL filled in. */
    public static native int ncclDevCommCreate(long comm, byte[] reqs, byte[] outDevComm);

    /** {@code devComm}: the 200 bytes ncclDevCommCreate filled in (a copy: NCCL finds it by its resourceWindow). */
    public static native int ncclDevCommDestroy(long comm, byte[] devComm);

    public static native int ncclCommGetUniqueId(long comm, byte[] uniqueId);

    /** {@code uniqueId} null for an existing rank given no id; {@code config} 0 for none. */
    public static native int ncclCommGrow(long comm, int nRanks, byte[] uniqueId, int rank, long[] newcomm, long config);

    public static native int ncclCommRevoke(long comm, int revokeFlags);
}
