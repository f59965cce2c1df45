package dev.ncclguard.it.apps;

import com.sun.jna.Library;
import com.sun.jna.Native;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.PointerByReference;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * The exit race of issue 34: {@code threads} workers create and destroy single-rank communicators
 * and events through JNA while the main thread calls System.exit after {@code delayMs}; the
 * application's shutdown hook parks every worker between two calls and writes the handles alive
 * at that moment to {@code out}: a line {@code comm 0x…} per communicator never destroyed, and
 * {@code event 0x…} per event recorded and neither synchronized since nor destroyed. Those, and
 * only those, are the leaks.
 *
 * <p>With {@code noisy} > 0, that many more workers ({@code noisy-…}) never park: they create and
 * at once destroy communicators through the exit, so the agent's exit report is taken while
 * creations and destroys are in flight (issue 34's window: NCCL's plugin has inited a record whose
 * bridge has not claimed it yet). What they hold at the report is theirs alone (the report may list
 * it under their thread or not); a communicator only the plugin saw is always a false leak here.
 *
 * <p>Arguments: out threads delayMs [shared-id|own-ids] [noisy].
 */
public final class ExitRaceApp {
    public interface Nccl extends Library {
        int ncclGetUniqueId(ExitApp.Id id);

        int ncclCommInitRank(PointerByReference comm, int nranks, ExitApp.Id.ByValue id, int rank);

        int ncclCommDestroy(Pointer comm);
    }

    public interface Cudart extends Library {
        int cudaEventCreate(PointerByReference event);

        int cudaEventRecord(Pointer event, Pointer stream);

        int cudaEventSynchronize(Pointer event);

        int cudaEventDestroy(Pointer event);
    }

    private static volatile boolean stop;
    /** One unique id every single-rank communicator is made of, with "shared-id": one commId for all. */
    private static byte[] SHARED_ID;
    private static final ConcurrentLinkedQueue<String> ALIVE = new ConcurrentLinkedQueue<>();

    private ExitRaceApp() {
    }

    public static void main(String[] args) throws Exception {
        Path out = Path.of(args[0]);
        int threads = Integer.parseInt(args[1]);
        long delayMs = Long.parseLong(args[2]);
        boolean sharedId = args.length > 3 && args[3].equals("shared-id");
        String emu = System.getProperty("ncclguard.emu");
        Cudart cudart = Native.load(emu + "/libcudart.so.13", Cudart.class);
        Nccl nccl = Native.load(emu + "/libnccl.so.2", Nccl.class);
        SHARED_ID = uniqueId(nccl);
        CountDownLatch parked = new CountDownLatch(threads);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            stop = true;
            try {
                if (!parked.await(30, TimeUnit.SECONDS)) {
                    System.err.println("workers did not park");
                    return;
                }
                Files.write(out, new ArrayList<>(ALIVE));
            } catch (InterruptedException | IOException e) {
                e.printStackTrace();
            }
        }, "app-park-workers"));
        for (int i = 0; i < threads; i++) {
            Thread t = new Thread(() -> work(nccl, cudart, parked, sharedId), "worker-" + i);
            t.setDaemon(true);
            t.start();
        }
        int noisy = args.length > 4 ? Integer.parseInt(args[4]) : 0;
        for (int i = 0; i < noisy; i++) {
            Thread t = new Thread(() -> churn(nccl, sharedId), "noisy-" + i);
            t.setDaemon(true);
            t.start();
        }
        Thread.sleep(delayMs);
        System.exit(0);
    }

    /** Creates and destroys until told to stop, then says what it holds and parks for good. */
    private static void work(Nccl nccl, Cudart cudart, CountDownLatch parked, boolean sharedId) {
        Deque<Pointer> comms = new ArrayDeque<>();
        Deque<Pointer> events = new ArrayDeque<>();
        List<Pointer> pending = new ArrayList<>(); // events recorded, not synchronized since
        ThreadLocalRandom random = ThreadLocalRandom.current();
        try {
            while (!stop) {
                switch (random.nextInt(6)) {
                    case 0, 1 -> {
                        ExitApp.Id.ByValue byValue = new ExitApp.Id.ByValue();
                        byValue.internal = sharedId ? SHARED_ID : uniqueId(nccl);
                        PointerByReference comm = new PointerByReference();
                        check(nccl.ncclCommInitRank(comm, 1, byValue, 0), "ncclCommInitRank");
                        comms.add(comm.getValue());
                    }
                    case 2 -> {
                        if (comms.size() > 1 || (!comms.isEmpty() && random.nextBoolean())) {
                            Pointer c = comms.poll();
                            check(nccl.ncclCommDestroy(c), "ncclCommDestroy");
                        }
                    }
                    case 3 -> {
                        PointerByReference event = new PointerByReference();
                        check(cudart.cudaEventCreate(event), "cudaEventCreate");
                        check(cudart.cudaEventRecord(event.getValue(), Pointer.NULL), "cudaEventRecord");
                        events.add(event.getValue());
                        pending.add(event.getValue());
                    }
                    case 4 -> {
                        if (!pending.isEmpty()) {
                            Pointer e = pending.remove(0);
                            check(cudart.cudaEventSynchronize(e), "cudaEventSynchronize");
                        }
                    }
                    default -> {
                        if (events.size() > 1) {
                            Pointer e = events.poll();
                            check(cudart.cudaEventSynchronize(e), "cudaEventSynchronize");
                            pending.remove(e);
                            check(cudart.cudaEventDestroy(e), "cudaEventDestroy");
                        }
                    }
                }
            }
        } catch (RuntimeException e) {
            e.printStackTrace();
        }
        for (Pointer c : comms) {
            ALIVE.add("comm 0x" + Long.toHexString(Pointer.nativeValue(c)));
        }
        for (Pointer e : pending) {
            ALIVE.add("event 0x" + Long.toHexString(Pointer.nativeValue(e)));
        }
        parked.countDown();
        while (true) {
            try {
                Thread.sleep(Long.MAX_VALUE);
            } catch (InterruptedException e) {
                // parked for good: the JVM ends around it
            }
        }
    }

    /** Creates and destroys at once, for ever: through the application's hook and the agent's report. */
    private static void churn(Nccl nccl, boolean sharedId) {
        try {
            while (true) {
                ExitApp.Id.ByValue byValue = new ExitApp.Id.ByValue();
                byValue.internal = sharedId ? SHARED_ID : uniqueId(nccl);
                PointerByReference comm = new PointerByReference();
                check(nccl.ncclCommInitRank(comm, 1, byValue, 0), "ncclCommInitRank");
                check(nccl.ncclCommDestroy(comm.getValue()), "ncclCommDestroy");
            }
        } catch (RuntimeException e) {
            e.printStackTrace();
        }
    }

    private static byte[] uniqueId(Nccl nccl) {
        ExitApp.Id id = new ExitApp.Id();
        check(nccl.ncclGetUniqueId(id), "ncclGetUniqueId");
        return id.internal.clone();
    }

    private static void check(int status, String call) {
        if (status != 0) {
            throw new IllegalStateException(call + " returned " + status);
        }
    }
}
