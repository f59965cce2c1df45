package dev.ncclguard.samples;

import com.sun.jna.Pointer;
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
 * recorded, synchronized and destroyed; and every {@link #SPLIT_EVERY} iterations a communicator
 * split off and destroyed again. Commands come on stdin, a line each:
 * <ul>
 * <li>{@code leak}: at the next iteration every rank splits off one more communicator and records
 *     one more event, and never releases either;</li>
 * <li>{@code stop}, or the end of the input: the loop ends; each rank synchronizes, checks its
 *     result and releases its communicator, stream and buffers (not what {@code leak} made).</li>
 * </ul>
 * The ranks meet at a barrier before each iteration, where the next command takes effect (one
 * per iteration, in order), so that they all make the same NCCL calls in the same order (NCCL
 * requires it of collective calls).
 */
final class Serve {
    static final int SPLIT_EVERY = 20;
    private static final long PAUSE_MILLIS = 10;

    /** What every rank does in one iteration; decided at the barrier, the same for all. */
    private record Step(long iteration, boolean leak, boolean stop) {
    }

    private static Serve current;

    private final CyclicBarrier barrier;
    /** Commands in the order they came; one is taken per iteration. */
    private final Queue<String> commands = new ConcurrentLinkedQueue<>();
    private boolean announceLeak;
    private volatile Step step;

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
        Pointer event = rank.createEvent();
        rank.recordEvent(event);
        rank.synchronizeEvent(event);
        rank.destroyEvent(event);
        if (s.iteration() % SPLIT_EVERY == 0) {
            rank.destroyCommunicator(rank.splitCommunicator());
        }
        if (s.leak()) {
            leakCommunicatorAndEvent(rank);
        }
        try {
            Thread.sleep(PAUSE_MILLIS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new SampleFailure("interrupted");
        }
    }

    /** Named for the creating stacks of the report: what "leak" leaves behind. */
    private static void leakCommunicatorAndEvent(Rank rank) {
        rank.splitCommunicator();
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
            say("serve: leaked: every rank split off a communicator and recorded an event it will not release");
        }
        String command = commands.poll();
        if ("stop".equals(command)) {
            say("serve: stopping after " + iteration + " iterations");
            step = new Step(iteration, false, true);
        } else if ("leak".equals(command)) {
            announceLeak = true;
            step = new Step(iteration, true, false);
        } else {
            step = new Step(iteration, false, false);
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
