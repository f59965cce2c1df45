package dev.ncclguard.track;

import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Set;

/**
 * The creating stacks live records hold, resolved into frames before classes are redefined
 * ({@link Tracker#classesRedefining}): a Throwable resolved after its class was redefined reads
 * "Unknown Source" for that class's frames. A class of its own, loaded at the first redefinition:
 * premain verifies the tracker without loading every kind of record.
 */
final class LiveStacks {
    private LiveStacks() {
    }

    /** Each distinct stack once (a Throwable keeps its frames once resolved). */
    static void resolve(Streams work, Communicators comms, Resources resources) {
        Set<Throwable> held = Collections.newSetFromMap(new IdentityHashMap<>());
        // collected under the maps' stripe locks (nothing else is taken there), resolved outside them
        work.events.forEach(r -> add(held, r));
        work.streams.forEach(r -> add(held, r));
        List<CommRecord> live = new ArrayList<>();
        comms.records.forEach(live::add);
        List<DevCommRecord> devComms = new ArrayList<>();
        for (CommRecord c : live) {
            add(held, c);
            CommResources r = c.resourcesOrNull();
            if (r != null) {
                r.devCommsTo(devComms);
            }
        }
        devComms.forEach(d -> add(held, d));
        if (resources != null) {
            resources.memory.forEach(m -> add(held, m));
        }
        for (Throwable t : held) {
            t.getStackTrace();
        }
    }

    private static void add(Set<Throwable> held, Tracked r) {
        if (r.creation != null) {
            held.add(r.creation);
        }
    }
}
