package dev.ncclguard.track;

/**
 * The arguments of one native call as a bridge decodes them, so that the tracker never sees the
 * binding library's types (JNA, JavaCPP, FFM). Indexes are C argument positions, 0-based.
 * Every method answers 0 (or null) for a null or unreadable argument; none of them throws.
 */
public interface CallArgs {
    /** A handle passed by value: ncclComm_t, cudaEvent_t, cudaStream_t (Pointer, long, address()). */
    long handle(int index);

    /** The handle the callee wrote into an out-parameter (ncclComm_t*, cudaEvent_t*, ...). */
    long handleOut(int index);

    /** Element {@code i} of an out-array of handles (ncclCommInitAll's ncclComm_t* comms). */
    long handleOut(int index, int i);

    /** An int passed by value (rank, nranks, color, key, device). */
    int intArg(int index);

    /** Element {@code i} of an int array (ncclCommInitAll's devlist); {@code fallback} if absent. */
    int intArray(int index, int i, int fallback);

    /**
     * {@code length} bytes of an argument: a struct passed by value (ncclUniqueId), a byte array,
     * or the memory a pointer argument points to; null if the bytes cannot be read.
     */
    byte[] bytes(int index, int length);

    /**
     * The C slot the agent's native library made for the event or stream this call created, whose
     * hot state lives there ({@link NativeSlots}); -1 for none (every bridge but the interposer).
     */
    default int nativeSlot() {
        return -1;
    }

    /** Whether native code made the call (the interposer bridge), which the native part follows itself. */
    default boolean fromNativeCode() {
        return false;
    }

    /**
     * The profiler plugin's records of communicators inited during this call, as the bridge knows
     * them: {@code first << 32 | count}; -1 when the bridge does not know (the tracker's
     * {@link NcclProfiler} then looks them up).
     */
    default long profilerInits() {
        return -1;
    }
}
