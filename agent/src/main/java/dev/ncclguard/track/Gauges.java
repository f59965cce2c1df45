package dev.ncclguard.track;

import java.util.IdentityHashMap;
import java.util.function.LongSupplier;

/**
 * The tracker's numbers for the live gauges (JMX, and through it jmx_exporter and Micrometer):
 * read from the records as they are, never on a tracked call, so the hot path pays nothing for
 * them. How long an event has been pending is learned by looking: an event record keeps no time of
 * its last record (a clock read per record would cost more than the agent's whole work on it), so
 * each reading notes when it first saw each record pending, and the next one counts the records
 * still pending since at least the threshold.
 */
final class Gauges {
    private final Communicators comms;
    private final Streams work;
    /** Pending event records as last seen: the record, its last record number, first seen pending at. */
    private IdentityHashMap<EventRecord, long[]> pendingSeen = new IdentityHashMap<>();
    /** What NCCL itself has in flight (the profiler bridge's count); null until one reports. */
    private volatile LongSupplier inFlight;

    Gauges(Communicators comms, Streams work) {
        this.comms = comms;
        this.work = work;
    }

    /** Creation time of the oldest live communicator; 0 when none is live. */
    long oldestLiveCommunicatorMillis() {
        long[] oldest = {Long.MAX_VALUE};
        comms.records.forEach(c -> oldest[0] = Math.min(oldest[0], c.createdAtMillis));
        return oldest[0] == Long.MAX_VALUE ? 0 : oldest[0];
    }

    /** Ops enqueued on live streams and not seen complete: the work the application has not waited for. */
    long streamOpsPending() {
        long[] sum = {0};
        work.streams.forEach(s -> sum[0] += Math.max(0, s.pendingOps()));
        return sum[0];
    }

    /**
     * Events whose last record this and earlier readings have seen pending (never seen complete)
     * for {@code thresholdMillis} or more; the first reading that sees a record pending starts its
     * clock. Memory: one entry per pending event, kept until the next reading.
     */
    synchronized int eventsPendingLongerThan(long thresholdMillis, long nowMillis) {
        IdentityHashMap<EventRecord, long[]> before = pendingSeen;
        IdentityHashMap<EventRecord, long[]> now = new IdentityHashMap<>(Math.max(16, before.size()));
        int[] count = {0};
        work.events.forEach(e -> {
            if (e.pendingOn() == EventRecord.NOT_PENDING) {
                return;
            }
            long record = e.lastRecordSeq();
            long[] seen = before.get(e);
            long since = seen != null && seen[0] == record ? seen[1] : nowMillis;
            now.put(e, new long[] {record, since});
            if (nowMillis - since >= thresholdMillis) {
                count[0]++;
            }
        });
        pendingSeen = now;
        return count[0];
    }

    void inFlightSource(LongSupplier source) {
        inFlight = source;
    }

    /** NCCL's own count of operations in flight, or -1 while no profiler bridge reports one. */
    long opsInFlight() {
        LongSupplier source = inFlight;
        return source == null ? -1 : Math.max(0, source.getAsLong());
    }
}
