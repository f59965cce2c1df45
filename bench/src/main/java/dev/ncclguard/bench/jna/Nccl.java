package dev.ncclguard.bench.jna;

import com.sun.jna.Library;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.IntByReference;
import com.sun.jna.ptr.PointerByReference;

/** The NCCL functions the benchmarks call, mapped by interface. */
public interface Nccl extends Library {
    int ncclFloat32 = 7;
    int ncclSum = 0;

    /** Not tracked by the agent. */
    int ncclGetVersion(IntByReference version);

    String ncclGetErrorString(int result);

    int ncclGetUniqueId(NcclUniqueId uniqueId);

    int ncclCommInitRank(PointerByReference comm, int nranks, NcclUniqueId.ByValue commId, int rank);

    int ncclCommDestroy(Pointer comm);

    int ncclAllReduce(Pointer sendbuff, Pointer recvbuff, long count, int datatype, int op,
                      Pointer comm, Pointer stream);
}
