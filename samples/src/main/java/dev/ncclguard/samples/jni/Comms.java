package dev.ncclguard.samples.jni;

/**
 * Communicators by hand-written JNI under names of the application's own, which the agent follows
 * only through a bindings file (samples/bindings/jni.txt):
 * {@code createComm} is ncclCommInitRank returning the handle, {@code destroyComm} is ncclCommDestroy;
 * {@code allocate}/{@code release} ncclMemAlloc/ncclMemFree, {@code register}/{@code unregister}
 * ncclCommRegister/ncclCommDeregister.
 */
public final class Comms {
    private Comms() {
    }

    /**
     * The new communicator. Throws IllegalStateException when ncclCommInitRank fails,
     * IllegalArgumentException unless {@code uniqueId} holds 128 bytes.
     */
    public static native long createComm(int nranks, byte[] uniqueId, int rank);

    public static native int destroyComm(long comm);

    /** ncclMemAlloc's memory; throws IllegalStateException when it fails, UnsupportedOperationException when NCCL lacks it. */
    public static native long allocate(long bytes);

    /** ncclMemFree. */
    public static native int release(long pointer);

    /** ncclCommRegister's handle; throws as {@link #allocate}. */
    public static native long register(long comm, long buffer, long bytes);

    /** ncclCommDeregister. */
    public static native int unregister(long comm, long handle);
}
