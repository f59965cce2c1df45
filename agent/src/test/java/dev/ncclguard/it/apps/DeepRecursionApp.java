package dev.ncclguard.it.apps;

import com.sun.jna.Library;
import com.sun.jna.Native;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.PointerByReference;

/**
 * Recurses until the stack overflows, with tracked CUDA calls at every level (an event created,
 * recorded, queried and destroyed), and does so again and again so that the JIT has compiled the
 * agent's code when an overflow meets it. Prints "overflows: N" and exits 0.
 */
public final class DeepRecursionApp {
    public interface Cudart extends Library {
        int cudaStreamCreate(PointerByReference stream);

        int cudaEventCreate(PointerByReference event);

        int cudaEventRecord(Pointer event, Pointer stream);

        int cudaEventQuery(Pointer event);

        int cudaEventDestroy(Pointer event);

        int cudaStreamSynchronize(Pointer stream);
    }

    private static Cudart cudart;
    private static Pointer stream;

    private DeepRecursionApp() {
    }

    private static int down(int depth) {
        PointerByReference event = new PointerByReference();
        cudart.cudaEventCreate(event);
        cudart.cudaEventRecord(event.getValue(), stream);
        cudart.cudaEventQuery(event.getValue());
        int below = down(depth + 1);
        cudart.cudaEventDestroy(event.getValue());
        return below + 1;
    }

    public static void main(String[] args) {
        cudart = Native.load(System.getProperty("ncclguard.emu") + "/libcudart.so.13", Cudart.class);
        PointerByReference s = new PointerByReference();
        cudart.cudaStreamCreate(s);
        stream = s.getValue();
        int rounds = Integer.parseInt(args[0]);
        int overflows = 0;
        for (int i = 0; i < rounds; i++) {
            try {
                down(0);
            } catch (StackOverflowError e) {
                overflows++;
            }
        }
        cudart.cudaStreamSynchronize(stream);
        System.out.println("overflows: " + overflows);
    }
}
