package dev.ncclguard.cleanup;

import dev.ncclguard.track.HandleView;
import java.util.Map;

/**
 * What one cleanup did.
 *
 * @param outcomes    each leak's outcome, in the order of the leaks
 * @param leftHanging a native call of cleanup had not returned when cleanup gave up on it: a
 *                    thread is still inside NCCL or CUDA, which the libraries' own exit-time
 *                    teardown may then wait for
 */
public record CleanupRun(Map<HandleView, LeakOutcome> outcomes, boolean leftHanging) {
    public static final CleanupRun NOTHING = new CleanupRun(Map.of(), false);
}
