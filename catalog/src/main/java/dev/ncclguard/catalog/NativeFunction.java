package dev.ncclguard.catalog;

/**
 * What one NCCL or CUDA runtime function means to the tracker, and where its arguments are.
 * Every position is a 0-based C argument index, or {@link #NONE} when the function has no such
 * argument.
 *
 * @param symbol     the C name, without NCCL's profiling prefix {@code p}
 * @param change     what a successful call changes: the effect's, kept here so that the tracker's
 *                   hot path reads it in one step
 * @param handle     the handle the function acts on: an out-parameter for creates
 *                   (ncclComm_t*, cudaEvent_t*, cudaStream_t*, ncclCommInitAll's array), by value
 *                   otherwise (the communicator of a collective, the event of a record, the
 *                   stream of a stream call, the memory of ncclMemFree, the registration or window
 *                   of a deregister); for device communicators a pointer to the ncclDevComm struct,
 *                   whose resourceWindow is the handle
 * @param parentComm the parent communicator of ncclCommSplit, ncclCommShrink and ncclCommGrow
 * @param stream     the stream work goes to, or the stream a stream call names
 * @param event      the event of cudaStreamWaitEvent
 * @param uniqueId   the ncclUniqueId: a struct by value, or a pointer to the first of
 *                   {@code count} ids (ncclCommInitRankScalable)
 * @param device     the device of cudaSetDevice, or ncclCommInitAll's devlist
 * @param count      the element count of an array argument: InitRankScalable's nId,
 *                   Shrink's excludeRanksCount
 * @param rankList   ncclCommShrink's excludeRanksList
 * @param comm       the communicator a registration, a window or a device communicator belongs to
 * @param bytes      a size in bytes (size_t): of ncclMemAlloc's memory, of a registered buffer or window
 * @param id         a dense index, 0..{@link Catalog#size()}-1, for per-function arrays
 */
public record NativeFunction(
        String symbol,
        Effect effect,
        Change change,
        int handle,
        int parentComm,
        int stream,
        int event,
        int rank,
        int nranks,
        int uniqueId,
        int device,
        int color,
        int key,
        int count,
        int rankList,
        int comm,
        int bytes,
        int id) {

    public static final int NONE = -1;

    public NativeFunction {
        if (change != effect.change()) {
            throw new IllegalArgumentException(symbol + ": " + effect + " changes " + effect.change() + ", not " + change);
        }
    }

    public NativeFunction(String symbol, Effect effect, int handle, int parentComm, int stream, int event, int rank,
            int nranks, int uniqueId, int device, int color, int key, int count, int rankList, int comm, int bytes,
            int id) {
        this(symbol, effect, effect.change(), handle, parentComm, stream, event, rank, nranks, uniqueId, device, color,
                key, count, rankList, comm, bytes, id);
    }

    /**
     * Every role's position, in the order of {@link #ROLES}: what a wrapper hands over, what a
     * bindings line may name.
     */
    public int[] positions() {
        return new int[] {handle, parentComm, stream, event, rank, nranks, uniqueId, device, color, key, count, rankList,
            comm, bytes};
    }

    /** The roles' names, as a bindings file writes them, in the order of {@link #positions()}. */
    public static final java.util.List<String> ROLES = java.util.List.of("handle", "parentComm", "stream", "event",
            "rank", "nranks", "uniqueId", "device", "color", "key", "count", "rankList", "comm", "bytes");
}
