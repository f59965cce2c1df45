package dev.ncclguard.report;

import dev.ncclguard.catalog.DetailKeys;
import dev.ncclguard.catalog.Kind;
import dev.ncclguard.cleanup.Outcome;
import dev.ncclguard.track.Details;
import dev.ncclguard.track.HandleView;
import dev.ncclguard.track.NativeOrigin;
import java.time.Instant;
import java.util.List;
import java.util.Map;

/**
 * One entry of the report's {@code leaks}: the tracker's view of the handle and what the exit
 * learned about it. It keeps the view rather than copies of its fields (the hex handle, the
 * creation time, a details map with stillPending added): an exit report makes 100,000 of these,
 * and the writers read the view's fields as they are.
 *
 * @param view         the handle as the tracker saw it
 * @param stack        application frames first, empty when stacks=off; leaks created at the same
 *                     place share one list (StackFrames.Cache)
 * @param stillPending the exit probe's answer for an event or stream (still in flight, or not); null
 *                     when unknown, and always for a communicator
 * @param cleanupNote  why, for a cleanup that failed or timed out; null when there is nothing to say
 */
public record Leak(
        HandleView view,
        List<String> stack,
        Boolean stillPending,
        Outcome cleanup,
        String cleanupNote) implements LeakGroups.Member {

    public Kind kind() {
        return view.kind();
    }

    /**
     * For a stream leak on a default stream, which no call created: "legacy" (handle 0 and
     * cudaStreamLegacy) or "per-thread" (cudaStreamPerThread); null for any other leak.
     */
    public String defaultStream() {
        if (view.kind() != Kind.STREAM) {
            return null;
        }
        long h = view.handle();
        return h == 0 || h == 1 ? "legacy" : h == 2 ? "per-thread" : null;
    }

    /** The handle as "0x…". */
    public String handle() {
        return view.hexHandle();
    }

    public String api() {
        return view.api();
    }

    public String bridge() {
        return view.bridge();
    }

    public String thread() {
        return view.thread();
    }

    public long createdAtMillis() {
        return view.createdAtMillis();
    }

    /** Where native code made it (the interposer bridge's leaks): calling library, symbol, native stack; else null. */
    public NativeOrigin origin() {
        return view.access() instanceof NativeOrigin o ? o : null;
    }

    @Override
    public String cleanupWord() {
        return cleanup.word();
    }

    @Override
    public boolean fromNativeCode() {
        return origin() != null;
    }

    @Override
    public String callerLibrary() {
        NativeOrigin o = origin();
        return o == null ? null : o.callerLibrary();
    }

    @Override
    public String callerSymbol() {
        NativeOrigin o = origin();
        return o == null ? null : o.callerSymbol();
    }

    @Override
    public List<String> nativeStack() {
        NativeOrigin o = origin();
        return o == null ? List.of() : o.nativeStack();
    }

    /**
     * A line the report adds to the leak: why ncclguard cannot release it itself and what the
     * application must do (a communicator only NCCL's profiler plugin saw); null for none.
     */
    public String note() {
        return view.access() == null ? null : view.access().cannotRelease();
    }

    public Instant createdAt() {
        return Instant.ofEpochMilli(view.createdAtMillis());
    }

    /**
     * The report's {@code details}, in report order: comm: rank, nranks, device, commId; event:
     * stream, device, stillPending; stream: pendingOps, device, stillPending (stillPending absent
     * when unknown).
     */
    public Map<String, Object> details() {
        return Details.copyOf(view.details()).with(DetailKeys.STILL_PENDING, stillPending);
    }
}
