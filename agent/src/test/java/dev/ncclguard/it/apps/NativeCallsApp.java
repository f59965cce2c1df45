package dev.ncclguard.it.apps;

import com.sun.jna.NativeLibrary;
import dev.ncclguard.samples.jni.Comms;
import dev.ncclguard.samples.jni.JniCudart;
import dev.ncclguard.samples.jni.JniGpu;
import dev.ncclguard.samples.jni.JniNccl;
import java.util.concurrent.Callable;

/**
 * Calls the samples' hand-written JNI methods (the ones the agent wraps) with good and bad
 * arguments and prints, one line each, what they returned or threw: run with and without the
 * agent, the two outputs must be the same.
 */
public final class NativeCallsApp {
    private NativeCallsApp() {
    }

    public static void main(String[] args) {
        String emu = System.getProperty("ncclguard.emu");
        NativeLibrary.getInstance(emu + "/libcudart.so.13");
        NativeLibrary.getInstance(emu + "/libnccl.so.2");
        JniGpu.open(true);
        show("cudaSetDevice(0)", () -> JniCudart.cudaSetDevice(0));
        show("cudaSetDevice(999)", () -> JniCudart.cudaSetDevice(999));
        show("cudaEventQuery(0)", () -> JniCudart.cudaEventQuery(0));
        show("ncclCommDestroy(0)", () -> JniNccl.ncclCommDestroy(0));
        show("ncclCommInitRank with a 3-byte id", () -> JniNccl.ncclCommInitRank(new long[1], 1, new byte[3], 0));
        show("ncclCommInitRank with a null id", () -> JniNccl.ncclCommInitRank(new long[1], 1, null, 0));
        show("createComm with 0 ranks", () -> Comms.createComm(0, new byte[128], 0));
        long[] stream = new long[1];
        show("cudaStreamCreate", () -> JniCudart.cudaStreamCreate(stream));
        show("stream written", () -> stream[0] != 0);
        show("cudaStreamQuery", () -> JniCudart.cudaStreamQuery(stream[0]));
        show("cudaStreamDestroy", () -> JniCudart.cudaStreamDestroy(stream[0]));
        byte[] id = new byte[128];
        show("ncclGetUniqueId", () -> JniNccl.ncclGetUniqueId(id));
        long[] comm = new long[1];
        show("createComm of 1 rank is not 0", () -> (comm[0] = Comms.createComm(1, id, 0)) != 0);
        show("destroyComm", () -> Comms.destroyComm(comm[0]));
    }

    private static void show(String what, Callable<Object> call) {
        try {
            System.out.println(what + " -> " + call.call());
        } catch (Throwable t) {
            System.out.println(what + " threw " + t);
        }
    }
}
