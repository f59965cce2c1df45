package dev.ncclguard.samples.direct;

import com.sun.jna.NativeLibrary;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.IntByReference;
import com.sun.jna.ptr.PointerByReference;
import dev.ncclguard.samples.jna.NcclUniqueId;

/**
 * nccl.h by JNA direct mapping, static form: static native methods that
 * {@code Native.register(DirectNccl.class, library)} binds to the library's symbols.
 */
final class DirectNccl {
    private DirectNccl() {
    }

    static void register(NativeLibrary library) {
        com.sun.jna.Native.register(DirectNccl.class, library);
    }

    static native int ncclGetVersion(IntByReference version);

    static native String ncclGetErrorString(int result);

    static native int ncclGetUniqueId(NcclUniqueId uniqueId);

    static native int ncclCommInitRank(PointerByReference comm, int nranks, NcclUniqueId.ByValue commId, int rank);

    /** {@code ncclComm_t* comms} as a long[]: direct mapping passes primitive arrays, not Pointer[]. */
    static native int ncclCommInitAll(long[] comms, int ndev, int[] devlist);

    static native int ncclCommDestroy(Pointer comm);

    static native int ncclCommAbort(Pointer comm);

    static native int ncclAllReduce(Pointer sendbuff, Pointer recvbuff, long count, int datatype, int op,
                                    Pointer comm, Pointer stream);
}
