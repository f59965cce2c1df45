package sample;

import com.sun.jna.Library;
import com.sun.jna.Native;
import com.sun.jna.Pointer;

/** The project's own JNA binding of the NCCL functions its tests call. */
public interface Nccl extends Library {
    Nccl LIB = Native.load("nccl", Nccl.class);

    int ncclCommInitAll(Pointer[] comms, int ndev, int[] devlist);

    int ncclCommDestroy(Pointer comm);

    /** A one-rank communicator on device 0. */
    static Pointer communicator() {
        Pointer[] comms = new Pointer[1];
        int status = LIB.ncclCommInitAll(comms, 1, new int[] {0});
        if (status != 0) {
            throw new IllegalStateException("ncclCommInitAll: " + status);
        }
        return comms[0];
    }
}
