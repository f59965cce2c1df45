package dev.ncclguard.track;

import dev.ncclguard.bridge.NativeAccess;
import java.util.Map;

/**
 * One tracked handle as the tracker saw it at a snapshot: immutable, safe to hand to cleanup and
 * reporters. {@code details} holds the kind's fields of the report (comm: rank, nranks, device,
 * commId, finalized; event: stream, device; stream: pendingOps, device) in report order.
 *
 * @param creation the creating stack as captured (formatting is the reporter's job), or null
 *                 when stacks=off
 * @param access   the library instance that created the handle, for queries and cleanup
 * @param claim    the right to release it at exit, shared with the application's own releases
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
        ReleaseClaim claim) {

    /** A view of a handle no tracker follows: any claim on it succeeds. */
    public HandleView(Kind kind, long handle, String api, String bridge, String thread, long createdAtMillis,
            Throwable creation, int device, Map<String, Object> details, NativeAccess access) {
        this(kind, handle, api, bridge, thread, createdAtMillis, creation, device, details, access,
                ReleaseClaim.UNTRACKED);
    }

    public String hexHandle() {
        return "0x" + Long.toHexString(handle);
    }
}
