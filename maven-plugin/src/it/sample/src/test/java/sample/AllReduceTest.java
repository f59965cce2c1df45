package sample;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.jna.Pointer;
import java.lang.management.ManagementFactory;
import java.util.List;
import org.junit.jupiter.api.Test;

/** A surefire test that releases what it makes (and keeps the warm-up communicator, suppressed). */
class AllReduceTest {
    @Test
    void aCommunicatorIsMadeAndDestroyed() {
        Warmup.communicator();
        Pointer comm = Nccl.communicator();
        assertEquals(0, Nccl.LIB.ncclCommDestroy(comm));
    }

    @Test
    void theTestJvmRunsTheAgentAndKeepsTheProjectsOwnFlags() {
        List<String> args = ManagementFactory.getRuntimeMXBean().getInputArguments();
        assertTrue(args.stream().anyMatch(a -> a.startsWith("-javaagent:") && a.contains("ncclguard-agent")), args.toString());
        assertTrue(args.contains("-Dsample.ownFlag=kept"), args.toString());
    }
}
