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

    // NCCL 2.28/2.29's other resources

    int ncclMemAlloc(PointerByReference ptr, long size);

    int ncclMemFree(Pointer ptr);

    int ncclCommRegister(Pointer comm, Pointer buff, long size, PointerByReference handle);

    int ncclCommDeregister(Pointer comm, Pointer handle);

    int ncclCommWindowRegister(Pointer comm, Pointer buff, long size, PointerByReference win, int winFlags);

    int ncclCommWindowDeregister(Pointer comm, Pointer win);

    /** {@code outDevComm} is a struct ncclDevComm NCCL fills in: Memory of {@code DEV_COMM_BYTES}. */
    int ncclDevCommCreate(Pointer comm, Pointer reqs, Pointer outDevComm);

    int ncclDevCommDestroy(Pointer comm, Pointer devComm);

    int ncclCommGetUniqueId(Pointer comm, NcclUniqueId uniqueId);

    /** {@code uniqueId} is a pointer here ({@code const ncclUniqueId*}), null for existing ranks without one. */
    int ncclCommGrow(Pointer comm, int nRanks, NcclUniqueId uniqueId, int rank, PointerByReference newcomm,
            Pointer config);

    int ncclCommRevoke(Pointer comm, int revokeFlags);
}
