package dev.ncclguard.cleanup;

import dev.ncclguard.catalog.Kind;
import dev.ncclguard.track.HandleView;
import dev.ncclguard.track.NativeAccess;
import java.util.List;

/**
 * The CUDA runtime instance cleanup uses for calls that belong to no leak: cudaSetDevice on its
 * own threads before releasing a communicator. Each leak's own calls go through the leak's access.
 *
 * @param cudart the application's CUDA runtime, or null when none is known (cudaSetDevice is
 *               then skipped; ncclCommDestroy and ncclCommAbort switch to the comm's device anyway)
 */
public record CudaRuntime(NativeAccess cudart) {
    public static CudaRuntime none() {
        return new CudaRuntime(null);
    }

    /**
     * The CUDA runtime that created a leaked event or stream, if any: events and streams come only
     * from the CUDA runtime, so their access is one.
     */
    public static CudaRuntime from(List<HandleView> leaks) {
        for (HandleView view : leaks) {
            if ((view.kind() == Kind.EVENT || view.kind() == Kind.STREAM) && view.access() != null) {
                return new CudaRuntime(view.access());
            }
        }
        // communicators made in native code: their access reaches the runtime their caller uses
        for (HandleView view : leaks) {
            if (view.access() != null && view.access().reachesCudaRuntime()) {
                return new CudaRuntime(view.access());
            }
        }
        return none();
    }
}
