package dev.ncclguard.track;

/** Memory from ncclMemAlloc, from the call to its ncclMemFree. */
final class MemoryRecord extends Tracked {
    /** The size asked for. */
    final long bytes;

    MemoryRecord(long handle, long serial, String api, String bridge, String thread, long createdAtMillis,
            Throwable creation, int device, NativeAccess access, long bytes) {
        super(handle, serial, api, bridge, thread, createdAtMillis, creation, device, access);
        this.bytes = bytes;
    }
}
