package dev.ncclguard.track;

import dev.ncclguard.catalog.Kind;
import java.util.Map;

/**
 * One tracked handle as the tracker saw it at a snapshot: immutable, safe to hand to cleanup and
 * reporters. {@code details} holds the kind's fields of the report (comm: rank, nranks, device,
 * commId, finalized, revoked, registrations, windows, deviceCommunicators; event: stream, device;
 * stream: pendingOps, device; devcomm: comm, commId, rank, nranks, device; memory: bytes,
 * device) in report order.
 *
 * @param creation the creating stack as captured (formatting is the reporter's job), or null
 *                 when stacks=off
 * @param access   the library instance that created the handle, for queries and cleanup
 * @param claim    the right to release it at exit, shared with the application's own releases
 * @param recordedOn for an event, the stream its last record went to when that stream is live and
 *                 an ordinary one (not 0x0, cudaStreamLegacy or cudaStreamPerThread, which mean
 *                 another stream on another thread or device): once that stream is idle, so is
 *                 the event. 0 otherwise
 * @param devComm  for a device communicator, what its ncclDevCommDestroy needs; null otherwise
 */
public record HandleView(
        Kind kind,
        long handle,
        String api,
        String bridge,
        String thread,
        long createdAtMillis,
        Throwable creation,
        int device,
        Map<String, Object> details,
        NativeAccess access,
        ReleaseClaim claim,
        long recordedOn,
        DevCommStruct devComm) {

    public HandleView(Kind kind, long handle, String api, String bridge, String thread, long createdAtMillis,
            Throwable creation, int device, Map<String, Object> details, NativeAccess access, ReleaseClaim claim,
            long recordedOn) {
        this(kind, handle, api, bridge, thread, createdAtMillis, creation, device, details, access, claim, recordedOn,
                null);
    }

    public HandleView(Kind kind, long handle, String api, String bridge, String thread, long createdAtMillis,
            Throwable creation, int device, Map<String, Object> details, NativeAccess access, ReleaseClaim claim) {
        this(kind, handle, api, bridge, thread, createdAtMillis, creation, device, details, access, claim, 0);
    }

    /** A view of a handle no tracker follows: any claim on it succeeds. */
    public HandleView(Kind kind, long handle, String api, String bridge, String thread, long createdAtMillis,
            Throwable creation, int device, Map<String, Object> details, NativeAccess access) {
        this(kind, handle, api, bridge, thread, createdAtMillis, creation, device, details, access,
                ReleaseClaim.UNTRACKED);
    }

    /**
     * Cheap, and consistent with the record's equals: views are map keys (probe answers, cleanup
     * outcomes) 100,000 at a time, and hashing every component (the details map) costs more.
     */
    @Override
    public int hashCode() {
        return Long.hashCode(handle) * 31 + Long.hashCode(createdAtMillis);
    }

    public String hexHandle() {
        return "0x" + Long.toHexString(handle);
    }
}
