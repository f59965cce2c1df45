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
}
