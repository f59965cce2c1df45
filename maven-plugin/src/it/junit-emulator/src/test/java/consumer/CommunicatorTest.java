package consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.sun.jna.Library;
import com.sun.jna.Native;
import com.sun.jna.Pointer;
import dev.ncclguard.junit.NcclGuardExtension;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** A JNA test against whatever libnccl the JVM finds: here the emulator the extension unpacked. */
@ExtendWith(NcclGuardExtension.class)
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
    void theJnaPathNamesTheUnpackedEmulatorAlone() {
        assertEquals(Path.of("target", "ncclguard-emulator").toAbsolutePath().toString(),
                System.getProperty("jna.library.path"));
    }
}
