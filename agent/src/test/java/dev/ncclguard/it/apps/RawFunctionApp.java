package dev.ncclguard.it.apps;

import com.sun.jna.Function;
import com.sun.jna.NativeLibrary;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.PointerByReference;

/**
 * Calls the CUDA runtime through raw {@code com.sun.jna.Function} objects (no interface mapping),
 * leaves an event recorded and never synchronized, then ends the way its first argument says:
 * {@code exit:N} (System.exit(N) on main), {@code thread-exit:N} (System.exit from another thread),
 * {@code throw} (an uncaught exception on main), {@code return} (main returns).
 */
public final class RawFunctionApp {
    private RawFunctionApp() {
    }

    public static void main(String[] args) throws Exception {
        String emu = System.getProperty("ncclguard.emu");
        NativeLibrary cudart = NativeLibrary.getInstance(emu + "/libcudart.so.13");
        PointerByReference stream = new PointerByReference();
        check(cudart.getFunction("cudaStreamCreate").invokeInt(new Object[] {stream}));
        PointerByReference event = new PointerByReference();
        check(cudart.getFunction("cudaEventCreate").invokeInt(new Object[] {event}));
        Function record = cudart.getFunction("cudaEventRecord");
        check(record.invokeInt(new Object[] {event.getValue(), stream.getValue()}));
        System.out.println("recorded event " + Pointer.nativeValue(event.getValue()));

        String how = args.length == 0 ? "return" : args[0];
        if (how.startsWith("exit:")) {
            System.exit(Integer.parseInt(how.substring(5)));
        } else if (how.startsWith("thread-exit:")) {
            int status = Integer.parseInt(how.substring(12));
            Thread t = new Thread(() -> System.exit(status), "exiter");
            t.start();
            t.join();
        } else if (how.equals("throw")) {
            throw new IllegalStateException("the application failed");
        }
    }

    private static void check(int status) {
        if (status != 0) {
            throw new IllegalStateException("CUDA error " + status);
        }
    }
}
