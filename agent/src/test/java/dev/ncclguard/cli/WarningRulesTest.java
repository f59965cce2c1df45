package dev.ncclguard.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.ncclguard.cli.WarningRules.Category;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** NCCL's warning texts (as NCCL 2.18 to 2.28 print them) and what they mean. */
class WarningRulesTest {
    static Stream<Arguments> warnings() {
        return Stream.of(
                Arguments.of("[Service thread] Connection closed by localRank 1", Category.EXIT, 1),
                Arguments.of("[Service thread] Could not receive type from localRank 3, res=3, closed=1", Category.EXIT, 3),
                Arguments.of("[Service thread] Accept failed Resource temporarily unavailable", Category.EXIT, null),
                Arguments.of("[Proxy Service 0] Failed to execute operation Close from rank 1, retcode 3", Category.EXIT, 1),
                Arguments.of("Cuda failure 'driver shutting down'", Category.EXIT, null),
                Arguments.of("[Proxy Service 9] Failed to execute operation Connect from rank 9, retcode 6", Category.NETWORK, 9),
                Arguments.of("NET/IB : Got completion from peer 10.0.35.1<49189> with status=12 opcode=0 len=0 vendor err 129 (Recv)",
                        Category.NETWORK, null),
                Arguments.of("socketStartConnect: Connect to 10.0.35.1<43781> failed : Software caused connection abort",
                        Category.NETWORK, null),
                Arguments.of("socketProgress: Connection closed by remote peer node2<42830>", Category.NETWORK, null),
                Arguments.of("Bootstrap : no socket interface found", Category.NETWORK, null),
                Arguments.of("Timeout waiting for connection from rank 3", Category.NETWORK, null),
                Arguments.of("Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 18000", Category.INIT, null),
                Arguments.of("Cuda failure 'out of memory'", Category.INIT, null),
                Arguments.of("Cuda failure 'initialization error'", Category.INIT, null),
                Arguments.of("ncclCommInitRank: invalid rank 2 for nranks 2", Category.INIT, null),
                Arguments.of("NET/Plugin: Failed to load libnccl-net.so", Category.INIT, null),
                Arguments.of("Cuda failure 'CUDA driver version is insufficient for CUDA runtime version'", Category.VERSION, null),
                Arguments.of("java.lang.UnsatisfiedLinkError: Error looking up function 'ncclCommShrink': "
                        + "/usr/lib/x86_64-linux-gnu/libnccl.so.2: undefined symbol: ncclCommShrink", Category.VERSION, null),
                Arguments.of("NET/Plugin: Failed to find ncclNetPlugin_v9 symbol.", Category.VERSION, null),
                Arguments.of("Error : ring 0 does not loop back to start (1 != 0)", Category.OTHER, null));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("warnings")
    void eachWarningHasItsCategoryAndTheRankItBlames(String message, Category category, Integer peer) {
        WarningRules.Verdict v = WarningRules.classify(message);
        assertEquals(category, v.category(), message);
        assertEquals(peer, v.peer(), message);
    }
}
