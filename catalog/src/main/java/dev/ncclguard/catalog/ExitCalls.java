package dev.ncclguard.catalog;

/**
 * The functions the agent calls itself, at exit (the probe and cleanup): each the catalog's first
 * function of its effect, so a name is written once, on its catalog line.
 */
public final class ExitCalls {
    public static final String EVENT_QUERY = Catalog.first(Effect.EVENT_QUERY).symbol();
    public static final String STREAM_QUERY = Catalog.first(Effect.STREAM_QUERY).symbol();
    public static final String EVENT_DESTROY = Catalog.first(Effect.EVENT_DESTROY).symbol();
    public static final String COMM_DESTROY = Catalog.first(Effect.COMM_DESTROY).symbol();
    public static final String COMM_ABORT = Catalog.first(Effect.COMM_ABORT).symbol();
    public static final String GROUP_START = Catalog.first(Effect.GROUP_START).symbol();
    public static final String GROUP_END = Catalog.first(Effect.GROUP_END).symbol();
    public static final String SET_DEVICE = Catalog.first(Effect.SET_DEVICE).symbol();
    public static final String DEVCOMM_DESTROY = Catalog.first(Effect.DEVCOMM_DESTROY).symbol();
    public static final String MEM_FREE = Catalog.first(Effect.MEM_FREE).symbol();
    /**
     * libc's _exit(2), which ends a process whose exit a call left hanging inside NCCL or CUDA; found
     * through a loaded NCCL or CUDA library, whose dependencies include libc.
     */
    public static final String LIBC_EXIT = "_exit";

    private ExitCalls() {
    }
}
