package dev.ncclguard.samples;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicReference;

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
        add("resources-leaky", "ncclMemAlloc memory registered and windowed with each communicator, a device"
                + " communicator each; nothing of it released", Scenarios::resourcesLeaky);
        add("resources-clean", "as resources-leaky, then the device communicators, windows, registrations,"
                + " communicators and memory released in that order", Scenarios::resourcesClean);
        add("grow-revoke", "each communicator grown by one new rank (ncclCommGrow, NCCL 2.29), the grown ones"
                + " revoked (ncclCommRevoke) and left alive; the parents destroyed", Scenarios::growRevoke);
        add("grow-clean", "as grow-revoke, then the grown communicators destroyed", Scenarios::growClean);
        add("serve", "runs until 'stop' on stdin, creating and releasing events and communicators;"
                + " 'leak' leaves one of each per rank", Serve::rank);
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

    /** Memory, a registration, a window and a device communicator on a communicator. */
    private static void holdResources(Rank rank) {
        rank.useDevice();
        rank.initCommunicator();
        rank.allocateNcclMemory();
        rank.registerBuffer();
        rank.registerWindow();
        rank.createDeviceCommunicator();
    }

    static void resourcesLeaky(Rank rank, int iterations) {
        holdResources(rank);
        System.out.println("rank " + rank.rank + ": NCCL memory, a registration, a window and a device communicator;"
                + " not released");
    }

    static void resourcesClean(Rank rank, int iterations) {
        holdResources(rank);
        rank.destroyDeviceCommunicator();
        rank.deregisterWindow();
        rank.deregisterBuffer();
        rank.destroyCommunicator();
        rank.freeNcclMemory();
    }

    /** The grow's id, made by rank 0 and read by every other rank: one grow per run. */
    private static final CompletableFuture<byte[]> GROW_ID = new CompletableFuture<>();

    private static void grow(Rank rank, boolean release) {
        rank.useDevice();
        rank.initCommunicator();
        int newRanks = rank.nranks + 1;
        Thread newRank = null;
        AtomicReference<RuntimeException> failure = new AtomicReference<>();
        if (rank.rank == 0) {
            byte[] id;
            try {
                id = rank.growId();
            } catch (RuntimeException e) {
                GROW_ID.completeExceptionally(e); // the other ranks fail too rather than wait for good
                throw e;
            }
            GROW_ID.complete(id);
            newRank = rank.startNewRank(newRanks, id, release, failure);
            rank.growCommunicator(newRanks, id);
        } else {
            try {
                GROW_ID.join(); // the id is made before any rank grows, as NCCL asks
            } catch (java.util.concurrent.CompletionException e) {
                throw new SampleFailure("rank 0 made no grow id: " + e.getCause().getMessage());
            }
            rank.growCommunicator(newRanks, null);
        }
        rank.revokeGrown();
        if (release) {
            rank.destroyGrown();
        }
        rank.destroyCommunicator();
        if (newRank != null) {
            try {
                newRank.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new SampleFailure("interrupted while waiting for the new rank");
            }
            if (failure.get() != null) {
                throw new SampleFailure("new rank: " + failure.get().getMessage());
            }
        }
        System.out.println("rank " + rank.rank + ": grew its communicator to " + newRanks + " ranks and revoked it"
                + (release ? ", then destroyed it" : ", left alive"));
    }

    static void growRevoke(Rank rank, int iterations) {
        grow(rank, false);
    }

    static void growClean(Rank rank, int iterations) {
        grow(rank, true);
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
