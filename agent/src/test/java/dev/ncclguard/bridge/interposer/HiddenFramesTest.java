package dev.ncclguard.bridge.interposer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.function.IntSupplier;
import org.junit.jupiter.api.Test;

class HiddenFramesTest {
    @Test
    void descriptorsResolveToTheirParameterTypes() throws Exception {
        assertArrayEquals(new Class<?>[] {Object.class, Runnable.class},
                HiddenFrames.parameters(null, "(Ljava/lang/Object;Ljava/lang/Runnable;)V"));
        assertArrayEquals(new Class<?>[] {int[].class, String[][].class, long.class, boolean.class, double.class},
                HiddenFrames.parameters(null, "([I[[Ljava/lang/String;JZD)Ljava/lang/String;"));
        assertEquals(0, HiddenFrames.parameters(null, "()V").length);
    }

    @Test
    void aThrowableLeavesOutHiddenClassesAndTheJdksHiddenMethods() {
        IntSupplier lambda = () -> 1;
        assertTrue(HiddenFrames.hidden(lambda.getClass(), "getAsInt", "()I"), lambda.getClass().getName());
        assertFalse(HiddenFrames.hidden(String.class, "length", "()I"));
        assertFalse(HiddenFrames.hidden(Thread.class, "run", "()V"));
        // @Hidden since 21: what made a stack named on 25 show one frame more than its Throwable
        assertEquals(Runtime.version().feature() >= 21,
                HiddenFrames.hidden(Thread.class, "runWith", "(Ljava/lang/Object;Ljava/lang/Runnable;)V"));
        // an application's class is never read for the annotation
        assertFalse(HiddenFrames.hidden(HiddenFramesTest.class, "aThrowableLeavesOutHiddenClassesAndTheJdksHiddenMethods", "()V"));
    }
}
