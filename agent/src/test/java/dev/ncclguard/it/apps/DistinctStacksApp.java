package dev.ncclguard.it.apps;

import com.sun.jna.Library;
import com.sun.jna.Native;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.PointerByReference;

/**
 * Leaks events made at distinct stacks: for each depth from 0 to the first argument less one,
 * as many events as the second argument says, each created {@code depth} calls of
 * {@link #atDepth} deep (so one more {@code atDepth} frame per depth) and recorded on one stream.
 * Then destroys events made at a few stacks a great many times (the third argument), which the
 * report must not show.
 */
public final class DistinctStacksApp {
    public interface Cudart extends Library {
        int cudaStreamCreate(PointerByReference stream);

        int cudaEventCreate(PointerByReference event);

        int cudaEventDestroy(Pointer event);

        int cudaEventRecord(Pointer event, Pointer stream);

        int cudaStreamSynchronize(Pointer stream);
    }

    private DistinctStacksApp() {
    }

    public static void main(String[] args) {
        int depths = Integer.parseInt(args[0]);
        int each = Integer.parseInt(args[1]);
        int pairs = args.length > 2 ? Integer.parseInt(args[2]) : 0;
        Cudart cudart = Native.load(System.getProperty("ncclguard.emu") + "/libcudart.so.13", Cudart.class);
        PointerByReference stream = new PointerByReference();
        if (cudart.cudaStreamCreate(stream) != 0) {
            throw new IllegalStateException("cudaStreamCreate failed");
        }
        PointerByReference event = new PointerByReference();
        for (int i = 0; i < pairs; i++) {
            if (cudart.cudaEventCreate(event) != 0 || cudart.cudaEventDestroy(event.getValue()) != 0) {
                throw new IllegalStateException("pair " + i + " failed");
            }
        }
        for (int d = 0; d < depths; d++) {
            for (int i = 0; i < each; i++) {
                atDepth(cudart, event, d);
                if (cudart.cudaEventRecord(event.getValue(), stream.getValue()) != 0) {
                    throw new IllegalStateException("cudaEventRecord failed");
                }
            }
        }
        cudart.cudaStreamSynchronize(stream.getValue());
        System.out.println("exiting");
        System.out.flush();
    }

    private static void atDepth(Cudart cudart, PointerByReference event, int depth) {
        if (depth == 0) {
            if (cudart.cudaEventCreate(event) != 0) {
                throw new IllegalStateException("cudaEventCreate failed");
            }
        } else {
            atDepth(cudart, event, depth - 1);
        }
    }
}
