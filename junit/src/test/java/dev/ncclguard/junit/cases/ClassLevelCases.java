package dev.ncclguard.junit.cases;

import static org.junit.jupiter.api.Assertions.assertNotNull;

import com.sun.jna.Pointer;
import dev.ncclguard.junit.NcclGuardExtension;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Run by ExtensionIT: a communicator made in @BeforeAll and never destroyed fails the class, not its test. */
@ExtendWith(NcclGuardExtension.class)
public class ClassLevelCases {
    static Pointer shared;

    @BeforeAll
    static void joinOnce() {
        shared = Gpu.communicator();
    }

    @Test
    void runsWhileTheSharedCommunicatorLives() {
        assertNotNull(shared);
    }
}
