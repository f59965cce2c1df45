package dev.ncclguard.junit.cases;

import com.sun.jna.Pointer;
import dev.ncclguard.junit.NcclGuardExtension;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Run by ExtensionIT in a child JVM: two tests that leak, two that do not. */
@ExtendWith(NcclGuardExtension.class)
public class LeakyCases {
    private Pointer released;

    @Test
    void leavesACommunicator() {
        Gpu.communicator();
    }

    @Test
    void leavesAPendingEvent() {
        Pointer stream = Gpu.stream();
        Pointer event = Gpu.event();
        Gpu.check(Gpu.CUDA.cudaEventRecord(event, stream), "cudaEventRecord");
    }

    @Test
    void releasesEverything() {
        Gpu.destroy(Gpu.communicator());
        Pointer stream = Gpu.stream();
        Pointer event = Gpu.event();
        Gpu.check(Gpu.CUDA.cudaEventRecord(event, stream), "cudaEventRecord");
        Gpu.check(Gpu.CUDA.cudaEventSynchronize(event), "cudaEventSynchronize");
        Gpu.check(Gpu.CUDA.cudaStreamSynchronize(stream), "cudaStreamSynchronize");
        Gpu.check(Gpu.CUDA.cudaEventDestroy(event), "cudaEventDestroy");
        Gpu.check(Gpu.CUDA.cudaStreamDestroy(stream), "cudaStreamDestroy");
    }

    @Test
    void releasesInAfterEach() {
        released = Gpu.communicator();
    }

    @AfterEach
    void release() {
        if (released != null) {
            Gpu.destroy(released);
            released = null;
        }
    }
}
