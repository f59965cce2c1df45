package dev.ncclguard.it.apps;

import com.sun.jna.Library;
import com.sun.jna.Native;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.PointerByReference;
import java.util.Map;

/**
 * A binding whose Java names are not the C names: a FunctionMapper maps them, as some
 * applications do. The agent must still see cudaEventCreate and cudaEventRecord.
 */
public final class MappedNamesApp {
    /** The application's own names for the CUDA runtime. */
    public interface Gpu extends Library {
        int makeStream(PointerByReference stream);

        int makeEvent(PointerByReference event);

        int mark(Pointer event, Pointer stream);
    }

    private MappedNamesApp() {
    }

    public static void main(String[] args) {
        Map<String, String> names = Map.of("makeStream", "cudaStreamCreate", "makeEvent", "cudaEventCreate",
                "mark", "cudaEventRecord");
        Gpu gpu = Native.load(System.getProperty("ncclguard.emu") + "/libcudart.so.13", Gpu.class,
                Map.of(Library.OPTION_FUNCTION_MAPPER,
                        (com.sun.jna.FunctionMapper) (library, method) -> names.get(method.getName())));
        PointerByReference stream = new PointerByReference();
        PointerByReference event = new PointerByReference();
        if (gpu.makeStream(stream) != 0 || gpu.makeEvent(event) != 0
                || gpu.mark(event.getValue(), stream.getValue()) != 0) {
            throw new IllegalStateException("CUDA call failed");
        }
        System.out.println("event recorded, never synchronized");
    }
}
