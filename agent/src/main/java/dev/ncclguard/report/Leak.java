package dev.ncclguard.report;

import dev.ncclguard.cleanup.CleanupOutcome;
import dev.ncclguard.track.Kind;
import java.time.Instant;
import java.util.List;
import java.util.Map;

/**
 * One entry of the report's {@code leaks}, in the field order of schema ncclguard-report/1.
 *
 * @param handle      the handle as "0x…"
 * @param stack       application frames first, empty when stacks=off
 * @param details     comm: rank, nranks, device, commId; event: stream, device, stillPending;
 *                    stream: pendingOps, device, stillPending (stillPending absent when unknown)
 * @param cleanupNote why, for a cleanup that failed or timed out; null when there is nothing to say
 */
public record Leak(
        Kind kind,
        String handle,
        String api,
        String bridge,
        String thread,
        Instant createdAt,
        List<String> stack,
        Map<String, Object> details,
        CleanupOutcome cleanup,
        String cleanupNote) {
}
