package dev.ncclguard.samples;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Queue;
import java.util.concurrent.BrokenBarrierException;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CyclicBarrier;

/**
 * The serve scenario: a long-running job to attach to. Each rank joins its communicator once, at
 * the start, then iterates in lockstep with the other ranks: an allreduce; an event created,
 * recorded, synchronized and destroyed; and every {@link #COMM_EVERY} iterations one more
 * communicator of all the ranks joined and destroyed again. Commands come on stdin, a line each:
 * <ul>
 * <li>{@code leak}: at the next iteration the ranks join one more communicator and each records
 *     one more event, and they never release either;</li>
 * <li>{@code stop}, or the end of the input: the loop ends; each rank synchronizes, checks its
 *     result and releases its communicator, stream and buffers (not what {@code leak} made).</li>
 * </ul>
 * The ranks meet at a barrier before each iteration, where the next command takes effect (one
 * per iteration, in order), so that they all make the same NCCL calls in the same order (NCCL
 * requires it of collective calls).
 */
final class Serve {
    static final int COMM_EVERY = 50;
    private static final long PAUSE_MILLIS = 10;

    /**
     * What every rank does in one iteration; decided at the barrier, the same for all.
     *
     * @param commId the unique id of the communicator the ranks join in this iteration, or null
     */
    private record Step(long iteration, boolean leak, boolean stop, byte[] commId) {
    }

    private static Serve current;

    private final CyclicBarrier barrier;
    /** Commands in the order they came; one is taken per iteration. */
    private final Queue<String> commands = new ConcurrentLinkedQueue<>();
    private boolean announceLeak;
    private volatile Step step;
    /** A rank to call ncclGetUniqueId through, from the barrier's action. */
    private volatile Rank anyRank;

    private Serve(int nranks) {
        this.barrier = new CyclicBarrier(nranks, this::nextStep);
    }

    private static synchronized Serve of(int nranks) {
        if (current == null) {
            current = new Serve(nranks);
            current.readCommands();
        }
        return current;
    }

    static void rank(Rank rank, int iterations) {
        Serve serve = of(rank.nranks);
        serve.anyRank = rank;
        try {
            rank.useDevice();
            rank.allocate();
            rank.initCommunicator();
            rank.allReduce(); // so that there is a result to check even if told to stop at once
            while (true) {
                Step s = serve.await();
                if (s.stop()) {
                    break;
                }
                iterate(rank, s);
            }
            rank.synchronizeStream();
            rank.checkResult();
            rank.destroyCommunicator();
            rank.free();
        } catch (RuntimeException | Error e) {
            serve.barrier.reset(); // the other ranks stop waiting for this one
            throw e;
        }
    }

    private static void iterate(Rank rank, Step s) {
        rank.allReduce();
        long event = rank.createEvent();
        rank.recordEvent(event);
        rank.synchronizeEvent(event);
        rank.destroyEvent(event);
        if (s.leak()) {
            leakCommunicatorAndEvent(rank, s.commId());
        } else if (s.commId() != null) {
            rank.destroyCommunicator(rank.initCommunicator(s.commId()));
        }
        try {
            Thread.sleep(PAUSE_MILLIS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new SampleFailure("interrupted");
        }
    }

    /** Named for the creating stacks of the report: what "leak" leaves behind. */
    private static void leakCommunicatorAndEvent(Rank rank, byte[] commId) {
        rank.initCommunicator(commId);
        rank.recordEvent(rank.createEvent());
    }

    private Step await() {
        try {
            barrier.await();
        } catch (BrokenBarrierException e) {
            throw new SampleFailure("another rank failed");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new SampleFailure("interrupted");
        }
        return step;
    }

    /** The barrier's action: runs once per iteration, while every rank waits. */
    private void nextStep() {
        Step previous = step;
        long iteration = previous == null ? 0 : previous.iteration() + 1;
        if (previous == null) {
            say("serve: ready, pid " + ProcessHandle.current().pid() + "; commands on stdin: leak, stop");
        }
        if (announceLeak) {
            announceLeak = false;
            say("serve: leaked: the ranks joined a communicator and recorded an event they will not release");
        }
        String command = commands.poll();
        if ("stop".equals(command)) {
            say("serve: stopping after " + iteration + " iterations");
            step = new Step(iteration, false, true, null);
        } else if ("leak".equals(command)) {
            announceLeak = true;
            step = new Step(iteration, true, false, anyRank.newUniqueId());
        } else {
            step = new Step(iteration, false, false, iteration % COMM_EVERY == 0 ? anyRank.newUniqueId() : null);
        }
    }

    private void readCommands() {
        Thread reader = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null) {
                    switch (line.trim()) {
                        case "leak", "stop" -> commands.add(line.trim());
                        case "" -> { }
                        default -> say("serve: unknown command '" + line.trim() + "' (leak, stop)");
                    }
                }
            } catch (IOException e) {
                say("serve: cannot read stdin: " + e.getMessage());
            }
            commands.add("stop");
        }, "serve-commands");
        reader.setDaemon(true);
        reader.start();
    }

    private static void say(String line) {
        System.out.println(line);
        System.out.flush();
    }
}
