package dev.ncclguard.junit;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class NcclGuardExtensionTest {
    @Test
    void junitsOwnFramesAreCutFromEachStack() {
        String report = "Leaked communicator 0x1: created by ncclCommInitAll, never destroyed or aborted\n"
                + "  Created on thread \"main\" at 2026-11-29T19:02:06.467Z through jna-interface:\n"
                + "    at com.example.Gpu.communicator(Gpu.java:26)\n"
                + "    at com.example.LeakyTest.leaks(LeakyTest.java:16)\n"
                + "    at org.junit.platform.commons.util.ReflectionUtils.invokeMethod(ReflectionUtils.java:786)\n"
                + "    at java.util.ArrayList.forEach(ArrayList.java:1511)\n"
                + "    at org.junit.platform.engine.support.hierarchical.NodeTestTask.execute(NodeTestTask.java:101)\n"
                + "    ... 12 more\n"
                + "  What to do: destroy it with ncclCommDestroy before exit, or ncclCommAbort on error paths.\n"
                + "\n"
                + "Pending event 0x2: created by cudaEventCreate\n"
                + "    at com.example.LeakyTest.leaks(LeakyTest.java:17)\n"
                + "  What to do: synchronize it (cudaEventSynchronize) before exit.";
        assertEquals("Leaked communicator 0x1: created by ncclCommInitAll, never destroyed or aborted\n"
                + "  Created on thread \"main\" at 2026-11-29T19:02:06.467Z through jna-interface:\n"
                + "    at com.example.Gpu.communicator(Gpu.java:26)\n"
                + "    at com.example.LeakyTest.leaks(LeakyTest.java:16)\n"
                + "    ... (JUnit)\n"
                + "  What to do: destroy it with ncclCommDestroy before exit, or ncclCommAbort on error paths.\n"
                + "\n"
                + "Pending event 0x2: created by cudaEventCreate\n"
                + "    at com.example.LeakyTest.leaks(LeakyTest.java:17)\n"
                + "  What to do: synchronize it (cudaEventSynchronize) before exit.",
                NcclGuardExtension.withoutJUnitFrames(report));
    }
}
