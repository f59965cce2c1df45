package dev.ncclguard.track;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

/**
 * The communicators the application released, newest kept: a program that splits a communicator
 * every step must not grow the agent's memory without bound. Releases are rare next to the calls
 * of the hot path, so one lock is enough.
 */
final class ReleasedComms {
    private final int limit;
    private final ArrayDeque<CommLife> kept;
    private long dropped;

    ReleasedComms(int limit) {
        this.limit = limit;
        this.kept = new ArrayDeque<>(Math.min(limit, 64));
    }

    synchronized void add(CommLife life) {
        if (kept.size() == limit) {
            kept.removeFirst();
            dropped++;
        }
        kept.addLast(life);
    }

    synchronized List<CommLife> list() {
        return new ArrayList<>(kept);
    }

    /** How many releases were dropped to stay within the limit. */
    synchronized long dropped() {
        return dropped;
    }
}
