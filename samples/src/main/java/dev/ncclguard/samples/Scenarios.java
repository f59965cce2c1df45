package dev.ncclguard.samples;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * What each rank does in each scenario. Every method runs on the rank's own thread, with the
 * rank's communicator id already handed out; the names here are what the creating stacks show.
 */
final class Scenarios {
    /** One scenario's work for one rank. */
    @FunctionalInterface
    interface RankWork {
        void run(Rank rank, int iterations);
    }

    record Scenario(String name, String summary, RankWork work) {
    }

    static final Map<String, Scenario> ALL = new LinkedHashMap<>();

    static {
        add("clean", "allreduces checked, then every communicator, event, stream and buffer released",
                Scenarios::clean);
        add("leaky", "allreduces checked, then communicators never destroyed, an event never synchronized,"
                + " the last allreduce never waited for", Scenarios::leaky);
        add("destroy-in-hook", "allreduces checked; communicators destroyed in the application's shutdown hook",
                Scenarios::destroyInHook);
        add("pending", "allreduces and an event enqueued, exit without waiting for them", Scenarios::pending);
    }

    private static void add(String name, String summary, RankWork work) {
        ALL.put(name, new Scenario(name, summary, work));
    }

    private Scenarios() {
    }

    static void clean(Rank rank, int iterations) {
        rank.useDevice();
        rank.allocate();
        rank.initCommunicator();
        long done = rank.createEvent();
        for (int i = 0; i < iterations; i++) {
            rank.allReduce();
        }
        rank.recordEvent(done);
        rank.synchronizeEvent(done);
        rank.checkResult();
        rank.synchronizeStream();
        rank.destroyEvent(done);
        rank.destroyCommunicator();
        rank.free();
    }

    static void leaky(Rank rank, int iterations) {
        rank.useDevice();
        rank.allocate();
        rank.initCommunicator();
        for (int i = 0; i < iterations; i++) {
            rank.allReduce();
        }
        rank.synchronizeStream();
        rank.checkResult();
        // One more step whose completion nobody waits for, then straight to exit: the
        // communicator, the event and the stream's last allreduce are left to process teardown.
        rank.allReduce();
        long lastStep = rank.createEvent();
        rank.recordEvent(lastStep);
    }

    static void destroyInHook(Rank rank, int iterations) {
        rank.useDevice();
        rank.allocate();
        rank.initCommunicator();
        long done = rank.createEvent();
        for (int i = 0; i < iterations; i++) {
            rank.allReduce();
        }
        rank.recordEvent(done);
        rank.pollEvent(done);
        rank.checkResult();
        rank.destroyEvent(done);
        // Registered once the work is done, so a rank that failed never leaves a hook waiting on it.
        Runtime.getRuntime().addShutdownHook(new Thread(() -> releaseAtShutdown(rank), "release-rank-" + rank.rank));
    }

    /** The application's own shutdown hook: the hook thread has no current device yet, so it sets one. */
    private static void releaseAtShutdown(Rank rank) {
        try {
            rank.useDevice();
            rank.synchronizeStream();
            rank.destroyCommunicator();
            rank.free();
            System.out.println("rank " + rank.rank + ": communicator destroyed in the shutdown hook");
        } catch (SampleFailure e) {
            System.err.println("samples: FAILED: rank " + rank.rank + ": " + e.getMessage());
            System.err.flush();
            Runtime.getRuntime().halt(1); // exit() would wait for this very hook
        }
    }

    static void pending(Rank rank, int iterations) {
        rank.useDevice();
        rank.allocate();
        rank.initCommunicator();
        for (int i = 0; i < iterations; i++) {
            rank.allReduce();
        }
        long lastStep = rank.createEvent();
        rank.recordEvent(lastStep);
        System.out.println("rank " + rank.rank + ": " + iterations + " allreduces of " + rank.count
                + " floats and an event enqueued; not waiting");
    }
}
