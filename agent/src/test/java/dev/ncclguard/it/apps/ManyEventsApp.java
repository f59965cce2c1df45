package dev.ncclguard.it.apps;

import com.sun.jna.Library;
import com.sun.jna.Native;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.PointerByReference;

/**
 * Leaks as many events as its first argument says, each recorded on one stream whose work is
 * done (second argument {@code created}) or on the legacy default stream ({@code legacy}, so that
 * each event is asked about one by one), prints "exiting" and returns from main: an exit with a
 * great many leaks and nothing hung.
 */
public final class ManyEventsApp {
    public interface Cudart extends Library {
        int cudaStreamCreate(PointerByReference stream);

        int cudaEventCreate(PointerByReference event);

        int cudaEventRecord(Pointer event, Pointer stream);

        int cudaStreamSynchronize(Pointer stream);
    }

    private ManyEventsApp() {
    }

    public static void main(String[] args) {
        int n = Integer.parseInt(args[0]);
        Cudart cudart = Native.load(System.getProperty("ncclguard.emu") + "/libcudart.so.13", Cudart.class);
        PointerByReference stream = new PointerByReference();
        if (cudart.cudaStreamCreate(stream) != 0) {
            throw new IllegalStateException("cudaStreamCreate failed");
        }
        Pointer on = args[1].equals("legacy") ? null : stream.getValue();
        PointerByReference event = new PointerByReference();
        for (int i = 0; i < n; i++) {
            if (cudart.cudaEventCreate(event) != 0 || cudart.cudaEventRecord(event.getValue(), on) != 0) {
                throw new IllegalStateException("event " + i + " failed");
            }
        }
        cudart.cudaStreamSynchronize(on);
        System.out.println("exiting");
        System.out.flush();
    }
}
