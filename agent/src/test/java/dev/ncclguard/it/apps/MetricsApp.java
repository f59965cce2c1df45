package dev.ncclguard.it.apps;

import com.sun.jna.Native;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.PointerByReference;
import dev.ncclguard.samples.jna.Cudart;
import dev.ncclguard.samples.jna.Nccl;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;

/**
 * A process with known numbers for the live gauges, which then waits for "exit" on stdin: two
 * communicators made by ncclCommInitAll, one of them destroyed; a stream with an allreduce and an
 * event record on it, neither waited for; the event pending.
 */
public final class MetricsApp {
    public static final String READY = "metrics-app: ready";

    private MetricsApp() {
    }

    public static void main(String[] args) throws Exception {
        String emu = System.getProperty("ncclguard.emu");
        Nccl nccl = Native.load(emu + "/libnccl.so.2", Nccl.class);
        Cudart cuda = Native.load(emu + "/libcudart.so.13", Cudart.class);
        Pointer[] comms = new Pointer[2];
        check(nccl.ncclCommInitAll(comms, 2, new int[] {0, 1}), "ncclCommInitAll");
        check(nccl.ncclCommDestroy(comms[0]), "ncclCommDestroy");
        check(cuda.cudaSetDevice(1), "cudaSetDevice");
        PointerByReference ref = new PointerByReference();
        check(cuda.cudaStreamCreate(ref), "cudaStreamCreate");
        Pointer stream = ref.getValue();
        check(cuda.cudaMalloc(ref, 1024), "cudaMalloc");
        Pointer buffer = ref.getValue();
        check(nccl.ncclAllReduce(buffer, buffer, 256, Nccl.ncclFloat32, Nccl.ncclSum, comms[1], stream), "ncclAllReduce");
        check(cuda.cudaEventCreate(ref), "cudaEventCreate");
        check(cuda.cudaEventRecord(ref.getValue(), stream), "cudaEventRecord");
        System.out.println(READY);
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null && !line.equals("exit")) {
            // anything else is not for us
        }
    }

    private static void check(int status, String call) {
        if (status != 0) {
            throw new IllegalStateException(call + " returned " + status);
        }
    }
}
