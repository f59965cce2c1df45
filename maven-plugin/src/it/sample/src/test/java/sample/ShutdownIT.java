package sample;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import com.sun.jna.Pointer;
import org.junit.jupiter.api.Test;

/** A failsafe test; with -Dsample.leak=true it forgets to destroy its communicator. */
class ShutdownIT {
    @Test
    void shutdownReleasesTheCommunicator() {
        Pointer comm = Nccl.communicator();
        assertNotNull(comm);
        if (!Boolean.getBoolean("sample.leak")) {
            assertEquals(0, Nccl.LIB.ncclCommDestroy(comm));
        }
    }
}
