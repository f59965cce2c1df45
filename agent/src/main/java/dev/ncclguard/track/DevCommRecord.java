package dev.ncclguard.track;

/**
 * A device communicator (ncclDevCommCreate), from its creation to its ncclDevCommDestroy or the end
 * of its communicator, which frees it in NCCL. NCCL names it by the struct's {@code resourceWindow}
 * (a copy of the struct destroys it as well), so that is its handle; NULL when it asked for no
 * resources.
 */
final class DevCommRecord extends Tracked {
    final CommRecord comm;
    /** The struct's rank and nRanks as NCCL filled them in. */
    final int rank;
    final int nranks;
    /** The struct as NCCL filled it in, for cleanup's ncclDevCommDestroy; null when it could not be read. */
    final byte[] struct;

    DevCommRecord(long handle, long serial, String api, String bridge, String thread, long createdAtMillis,
            Throwable creation, int device, NativeAccess access, CommRecord comm, int rank, int nranks,
            byte[] struct) {
        super(handle, serial, api, bridge, thread, createdAtMillis, creation, device, access);
        this.comm = comm;
        this.rank = rank;
        this.nranks = nranks;
        this.struct = struct;
    }
}
