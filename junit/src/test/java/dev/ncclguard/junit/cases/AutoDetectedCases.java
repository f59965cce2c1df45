package dev.ncclguard.junit.cases;

import org.junit.jupiter.api.Test;

/** Run by ExtensionIT: no @ExtendWith; the extension comes from META-INF/services when autodetection is on. */
public class AutoDetectedCases {
    @Test
    void leavesACommunicatorUnannotated() {
        Gpu.communicator();
    }
}
