package consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.jna.Library;
import com.sun.jna.Native;
import com.sun.jna.Pointer;
import org.junit.jupiter.api.Test;

/** A JNA test against whatever libnccl the JVM finds: here the emulator the plugin unpacked. */
class CommunicatorTest {
    interface Nccl extends Library {
        Nccl LIB = Native.load("nccl", Nccl.class);

        int ncclCommInitAll(Pointer[] comms, int ndev, int[] devlist);

        int ncclCommDestroy(Pointer comm);
    }

    @Test
    void aCommunicatorIsMadeAndReleasedUnlessTheBuildAsksForALeak() {
        Pointer[] comms = new Pointer[1];
        assertEquals(0, Nccl.LIB.ncclCommInitAll(comms, 1, new int[] {0}));
        if (!Boolean.getBoolean("consumer.leak")) {
            assertEquals(0, Nccl.LIB.ncclCommDestroy(comms[0]));
        }
    }

    @Test
    void theLoaderPathNamesTheEmulatorToo() {
        String path = System.getenv("LD_LIBRARY_PATH");
        assertTrue(path != null && path.endsWith("ncclguard-emulator"), "LD_LIBRARY_PATH=" + path);
    }
}
