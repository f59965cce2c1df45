package dev.ncclguard.catalog;

/**
 * What a successful call changes in what the tracker follows: each {@link Effect} names one, and
 * the tracker implements each once. The calls of the hot path (records, queries, synchronizes,
 * collectives) are followed on their handle and stream passed by value alone ({@link #onHandles}),
 * the rest on their decoded arguments.
 */
public enum Change {
    /** A communicator out of a unique id; the handle is an out-parameter. */
    NEW_COMMUNICATOR(Path.ARGUMENTS, true),
    /** The communicators of one clique, one per device (ncclCommInitAll). */
    NEW_CLIQUE(Path.ARGUMENTS, true),
    /** A child communicator, or none for NCCL_SPLIT_NOCOLOR; its identity derives from its parent's. */
    SPLIT_COMMUNICATOR(Path.ARGUMENTS, true),
    /** A child communicator without the excluded ranks, renumbered. */
    SHRINK_COMMUNICATOR(Path.ARGUMENTS, true),
    /** A step before the release, not an end. */
    FINALIZE_COMMUNICATOR(Path.ARGUMENTS, false),
    /** The communicator ends: the record found before the call, claimed then. */
    RELEASE_COMMUNICATOR(Path.ARGUMENTS, false),
    NEW_EVENT(Path.ARGUMENTS, true),
    /** The event ends: the record found before the call, claimed then. */
    RELEASE_EVENT(Path.ARGUMENTS, false),
    NEW_STREAM(Path.ARGUMENTS, true),
    RELEASE_STREAM(Path.ARGUMENTS, false),
    /** Every stream of the thread's current device is complete up to the call's start. */
    SYNCHRONIZE_DEVICE(Path.ARGUMENTS, false),
    /** The thread's current device. */
    SET_DEVICE(Path.ARGUMENTS, false),
    /** NCCL work called from now on is launched at the outermost group end. */
    OPEN_GROUP(Path.ARGUMENTS, false),
    CLOSE_GROUP(Path.ARGUMENTS, false),
    /** The event's last record, as of the call's start, is complete. Found by the event. */
    COMPLETE_EVENT(Path.BY_HANDLE, false),
    /** The stream's work, as of the call's start, is complete. Found by the stream. */
    COMPLETE_STREAM(Path.BY_STREAM, false),
    /** One op enqueued on the stream, which the event's completion will cover. Found by the stream. */
    RECORD_EVENT(Path.BY_STREAM, false),
    /** One op enqueued on the stream through a communicator, on its device; inside a group, at its end. */
    ENQUEUE_COLLECTIVE(Path.BY_STREAM, false),
    /** One op (a wait) enqueued on the stream. */
    ENQUEUE_WAIT(Path.BY_STREAM, false),
    /**
     * A communicator of more ranks: on an existing rank out of its parent (same rank and device),
     * on a new rank out of the grow's unique id.
     */
    GROW_COMMUNICATOR(Path.ARGUMENTS, true),
    /** The communicator takes no new work; a step, not an end: it still needs destroy or abort. */
    REVOKE_COMMUNICATOR(Path.ARGUMENTS, false),
    /** Memory of its size on the thread's current device; the handle is an out-parameter. */
    NEW_MEMORY(Path.ARGUMENTS, true),
    /** The memory ends: the record found before the call, claimed then. */
    RELEASE_MEMORY(Path.ARGUMENTS, false),
    /** One more registration of a buffer with its communicator, counted there; the handle is an out-parameter. */
    REGISTER_BUFFER(Path.ARGUMENTS, true),
    /** One registration less; the last one of a handle ends it. */
    DEREGISTER_BUFFER(Path.ARGUMENTS, false),
    /** A window of its communicator over a buffer, counted there; the handle is an out-parameter. */
    REGISTER_WINDOW(Path.ARGUMENTS, true),
    DEREGISTER_WINDOW(Path.ARGUMENTS, false),
    /** A device communicator of its communicator: the struct it filled in names it by its resourceWindow. */
    NEW_DEVICE_COMMUNICATOR(Path.ARGUMENTS, true),
    /** The device communicator ends: the record found before the call, by its struct, claimed then. */
    RELEASE_DEVICE_COMMUNICATOR(Path.ARGUMENTS, false);

    /**
     * How the tracker reads a call: through its decoded arguments (CallArgs), or on its handle and
     * stream alone, what it acts on found by the handle or by the stream. Constants, not an enum:
     * they are compiled into the uses, so premain loads no class for them.
     */
    private static final class Path {
        static final int ARGUMENTS = 0;
        static final int BY_HANDLE = 1;
        static final int BY_STREAM = 2;
    }

    private final int path;
    private final boolean creates;

    Change(int path, boolean creates) {
        this.path = path;
        this.creates = creates;
    }

    /**
     * Whether the call is followed on its handle and stream passed by value alone: a bridge may
     * then find the record it acts on before the call and carry it to the exit, decoding no
     * other argument.
     */
    public boolean onHandles() {
        return path != Path.ARGUMENTS;
    }

    /** Whether what an {@link #onHandles} call acts on is found by its stream (else by its handle). */
    public boolean findsByStream() {
        return path == Path.BY_STREAM;
    }

    /** Whether the call writes a new handle through its handle argument (an out-parameter). */
    public boolean creates() {
        return creates;
    }
}
