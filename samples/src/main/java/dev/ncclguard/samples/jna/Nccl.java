package dev.ncclguard.samples.jna;

import com.sun.jna.Library;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.IntByReference;
import com.sun.jna.ptr.PointerByReference;

/**
 * The part of nccl.h the samples use, mapped by JNA. A communicator ({@code ncclComm_t}) and a
 * stream ({@code cudaStream_t}) are opaque pointers; {@code size_t} is a {@code long} on 64-bit Linux.
 */
public interface Nccl extends Library {
    int ncclSuccess = 0;
    /** ncclDataType_t */
    int ncclFloat32 = 7;
    /** ncclRedOp_t */
    int ncclSum = 0;

    int ncclGetVersion(IntByReference version);

    String ncclGetErrorString(int result);

    /** Fills {@code uniqueId}, which every rank then passes by value to {@link #ncclCommInitRank}. */
    int ncclGetUniqueId(NcclUniqueId uniqueId);

    int ncclCommInitRank(PointerByReference comm, int nranks, NcclUniqueId.ByValue commId, int rank);

    /** One communicator per device, all in this process; {@code devlist} null means devices 0..ndev-1. */
    int ncclCommInitAll(Pointer[] comms, int ndev, int[] devlist);

    int ncclCommDestroy(Pointer comm);

    int ncclCommAbort(Pointer comm);

    int ncclAllReduce(Pointer sendbuff, Pointer recvbuff, long count, int datatype, int op,
                      Pointer comm, Pointer stream);

    int ncclGroupStart();

    int ncclGroupEnd();
}
