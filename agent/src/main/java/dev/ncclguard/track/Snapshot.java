package dev.ncclguard.track;

import dev.ncclguard.catalog.Kind;
import java.util.ArrayList;
import java.util.List;

/**
 * The tracker's state at one moment: the handles that are leaks by SPEC.md's rules, oldest first,
 * and the counters of the report's summary.
 *
 * @param comms              communicators created and never destroyed or aborted
 * @param events             events recorded whose last record was never seen complete
 * @param streams            streams with work enqueued after their last observed completion
 * @param devComms           device communicators never destroyed, of communicators alive
 * @param memory             ncclMemAlloc memory never freed
 * @param commsCreated       communicators created since the tracker started
 * @param commsReleased      communicators destroyed or aborted since the tracker started
 * @param internalErrors     failures inside the tracker that it caught so the application never
 *                           saw them; the caller logs {@code firstInternalError}
 */
public record Snapshot(
        List<HandleView> comms,
        List<HandleView> events,
        List<HandleView> streams,
        List<HandleView> devComms,
        List<HandleView> memory,
        long commsCreated,
        long commsReleased,
        int liveComms,
        int liveEvents,
        int liveStreams,
        int liveDevComms,
        int liveMemory,
        long internalErrors,
        Throwable firstInternalError) {

    public Snapshot {
        comms = List.copyOf(comms);
        events = List.copyOf(events);
        streams = List.copyOf(streams);
        devComms = List.copyOf(devComms);
        memory = List.copyOf(memory);
    }

    /** Handles of {@code kind} the tracker follows now, leaks or not. */
    public int live(Kind kind) {
        return switch (kind) {
            case COMM -> liveComms;
            case EVENT -> liveEvents;
            case STREAM -> liveStreams;
            case DEVCOMM -> liveDevComms;
            case MEMORY -> liveMemory;
        };
    }

    /** Every leak: communicators, then events, streams, device communicators, memory. */
    public List<HandleView> leaks() {
        List<HandleView> all = new ArrayList<>(comms.size() + events.size() + streams.size() + devComms.size()
                + memory.size());
        all.addAll(comms);
        all.addAll(events);
        all.addAll(streams);
        all.addAll(devComms);
        all.addAll(memory);
        return all;
    }

    public boolean hasLeaks() {
        return !comms.isEmpty() || !events.isEmpty() || !streams.isEmpty() || !devComms.isEmpty()
                || !memory.isEmpty();
    }
}
