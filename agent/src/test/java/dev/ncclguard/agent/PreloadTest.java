package dev.ncclguard.agent;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;

import org.junit.jupiter.api.Test;

class PreloadTest {
    /** A renamed or removed class would silently drop out of the preloading: the lists must follow the code. */
    @Test
    void everyPreloadedClassExists() {
        for (String[] names : new String[][] {Preload.PREMAIN, Preload.FIRST_JNA_CALLS}) {
            for (String name : names) {
                assertDoesNotThrow(() -> Class.forName(name, false, PreloadTest.class.getClassLoader()), name);
            }
        }
    }
}
