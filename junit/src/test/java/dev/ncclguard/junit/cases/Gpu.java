package dev.ncclguard.junit.cases;

import com.sun.jna.Native;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.PointerByReference;
import dev.ncclguard.samples.jna.Cudart;
import dev.ncclguard.samples.jna.Nccl;

/** The inner suite's NCCL and CUDA, the emulator's, through the samples' JNA mappings. */
final class Gpu {
    static final Nccl NCCL;
    static final Cudart CUDA;

    static {
        String emu = System.getProperty("ncclguard.emu");
        NCCL = Native.load(emu + "/libnccl.so.2", Nccl.class);
        CUDA = Native.load(emu + "/libcudart.so.13", Cudart.class);
    }

    private Gpu() {
    }

    /** A one-rank communicator on device 0, by ncclCommInitAll. */
    static Pointer communicator() {
        Pointer[] comms = new Pointer[1];
        check(NCCL.ncclCommInitAll(comms, 1, new int[] {0}), "ncclCommInitAll");
        return comms[0];
    }

    static void destroy(Pointer comm) {
        check(NCCL.ncclCommDestroy(comm), "ncclCommDestroy");
    }

    static Pointer stream() {
        PointerByReference ref = new PointerByReference();
        check(CUDA.cudaStreamCreate(ref), "cudaStreamCreate");
        return ref.getValue();
    }

    static Pointer event() {
        PointerByReference ref = new PointerByReference();
        check(CUDA.cudaEventCreate(ref), "cudaEventCreate");
        return ref.getValue();
    }

    static void check(int status, String call) {
        if (status != 0) {
            throw new IllegalStateException(call + " returned " + status);
        }
    }
}
