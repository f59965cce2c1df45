package dev.ncclguard.samples.direct;

import com.sun.jna.NativeLibrary;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.PointerByReference;
import dev.ncclguard.samples.jna.NcclUniqueId;

/** NCCL 2.29's grow and revoke by JNA direct mapping, apart: NCCL 2.28 lacks them (see {@link DirectNcclResources}). */
final class DirectNcclGrow {
    private DirectNcclGrow() {
    }

    static void register(NativeLibrary library) {
        com.sun.jna.Native.register(DirectNcclGrow.class, library);
    }

    static native int ncclCommGetUniqueId(Pointer comm, NcclUniqueId uniqueId);

    static native int ncclCommGrow(Pointer comm, int nRanks, NcclUniqueId uniqueId, int rank, PointerByReference newcomm,
            Pointer config);

    static native int ncclCommRevoke(Pointer comm, int revokeFlags);
}
