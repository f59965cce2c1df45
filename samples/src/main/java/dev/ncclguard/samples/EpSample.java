package dev.ncclguard.samples;

import com.sun.jna.ptr.IntByReference;
import dev.ncclguard.samples.ep.EpRuntime;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The DeepEP-style scenarios: each rank, a Java thread, drives a runtime whose C library does all
 * the NCCL and CUDA work ({@link EpRuntime}); the Java side only calls open, dispatch and close.
 */
final class EpSample {
    /** The scenarios and what each shows. */
    static final Map<String, String> SCENARIOS = new LinkedHashMap<>();

    static {
        SCENARIOS.put("ep-clean", "each rank opens the runtime, dispatches --iters steps, closes it (result checked,"
                + " everything released)");
        SCENARIOS.put("ep-leaky", "each rank opens the runtime and dispatches --iters steps, never closes it:"
                + " communicator, stream and event made in C left to process exit");
        SCENARIOS.put("ep-pthread", "as ep-leaky, with the communicator made on a thread of the runtime's own"
                + " (no Java frames there)");
    }

    private EpSample() {
    }

    static void run(Options options, GpuLibraries libraries) {
        IntByReference count = new IntByReference();
        int status = libraries.cudart.cudaGetDeviceCount(count);
        if (status != 0 || count.getValue() < 1) {
            throw new SampleFailure("no CUDA device (cudaGetDeviceCount: " + status + ")");
        }
        int nranks = Math.min(options.ranks(), count.getValue());
        String scenario = options.scenario();
        System.out.println("samples: " + scenario + " on " + nranks + (nranks == 1 ? " rank, " : " ranks, ")
                + options.iterations() + " steps of " + options.count() + " floats, through the EP runtime's C library");
        EpRuntime.load();
        byte[] group = EpRuntime.newGroupId();
        List<Thread> threads = new ArrayList<>();
        List<Throwable> failures = new ArrayList<>();
        for (int r = 0; r < nranks; r++) {
            int rank = r;
            Thread t = new Thread(() -> {
                try {
                    rankWork(scenario, group, nranks, rank, options);
                } catch (RuntimeException e) {
                    synchronized (failures) {
                        failures.add(e);
                    }
                }
            }, "rank-" + r);
            threads.add(t);
            t.start();
        }
        for (Thread t : threads) {
            try {
                t.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new SampleFailure("interrupted while waiting for the ranks");
            }
        }
        if (!failures.isEmpty()) {
            Throwable first = failures.get(0);
            throw first instanceof SampleFailure f ? f : new SampleFailure(first.getMessage());
        }
        System.out.println("samples: " + scenario + ": " + SCENARIOS.get(scenario));
    }

    /** One rank: the names here are what a report's Java frames show. */
    private static void rankWork(String scenario, byte[] group, int nranks, int rank, Options options) {
        long runtime = openRuntime(group, nranks, rank, options.count(), scenario.equals("ep-pthread"));
        for (int i = 0; i < options.iterations(); i++) {
            step(runtime);
        }
        if (scenario.equals("ep-clean")) {
            int wrong = EpRuntime.close(runtime);
            if (wrong >= 0) {
                throw new SampleFailure("rank " + rank + ": element " + wrong + " of the last step's result is wrong");
            }
            System.out.println("rank " + rank + " (device " + rank + "): " + options.iterations() + " steps of "
                    + options.count() + " floats, results correct");
        } else {
            System.out.println("rank " + rank + " (device " + rank + "): " + options.iterations() + " steps dispatched,"
                    + " the runtime never closed");
        }
    }

    private static long openRuntime(byte[] group, int nranks, int rank, int count, boolean onLibraryThread) {
        try {
            return EpRuntime.open(group, nranks, rank, rank, count, onLibraryThread);
        } catch (IllegalStateException e) {
            throw new SampleFailure("rank " + rank + ": " + e.getMessage());
        }
    }

    private static void step(long runtime) {
        try {
            EpRuntime.dispatch(runtime);
        } catch (IllegalStateException e) {
            throw new SampleFailure(e.getMessage());
        }
    }
}
