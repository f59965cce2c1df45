package dev.ncclguard.samples.jni;

/**
 * Communicators by hand-written JNI under names of the application's own, which the agent follows
 * only through a bindings file (samples/bindings/jni.txt):
 * {@code createComm} is ncclCommInitRank returning the handle, {@code destroyComm} is ncclCommDestroy.
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
}
