package dev.ncclguard.samples;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;

/**
 * Runs one sample scenario over N ranks in this process, one thread and one GPU per rank:
 * {@code java -jar ncclguard-samples.jar <scenario> [--ranks N] [--iters N] [--count N] [--init rank|all]
 * [--bridge jna|jna-direct|jni|jni-bindings|javacpp|ffm]}.
 * Exit status: 0 done, 1 a failed call or a wrong result, 2 a bad command line.
 */
public final class Samples {
    static final String USAGE = "usage: java -jar ncclguard-samples.jar <" + String.join("|", Scenarios.ALL.keySet())
            + "|" + String.join("|", EpSample.SCENARIOS.keySet()) + "> [--ranks N] [--iters N] [--count N] [--init rank|all] [--bridge " + String.join("|", Bridges.NAMES) + "]";

    private Samples() {
    }

    public static void main(String[] args) {
        System.exit(run(args));
    }

    static int run(String[] args) {
        if (MultiRank.handles(args)) {
            return MultiRank.run(args); // one JVM per rank: its own command line
        }
        Options options;
        try {
            options = Options.parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println("samples: " + e.getMessage());
            System.err.println(USAGE);
            return 2;
        }
        if (options.help()) {
            printHelp(System.out);
            return 2;
        }
        try {
            runScenario(options);
            return 0;
        } catch (SampleFailure e) {
            System.err.println("samples: FAILED: " + e.getMessage());
            return 1;
        }
    }

    private static void runScenario(Options options) {
        Scenarios.Scenario scenario = Scenarios.ALL.get(options.scenario());
        GpuLibraries libraries = GpuLibraries.load();
        System.out.println("samples: " + libraries.describe());
        if (scenario == null) {
            EpSample.run(options, libraries); // the DeepEP-style runtime: its own JNI library, no --bridge
            return;
        }
        Gpu gpu = Bridges.open(options.bridge(), libraries);
        // NCCL's first: beside a foreign CUDA runtime the emulated NCCL says so at its first call
        int version = gpu.ncclVersionCode();
        int devices = gpu.deviceCount();
        if (devices < 1) {
            throw new SampleFailure("no CUDA device");
        }
        int nranks = Math.min(options.ranks(), devices);
        System.out.println("samples: NCCL " + ncclVersion(version) + ", " + devices + " CUDA devices; "
                + scenario.name() + " on " + nranks + (nranks == 1 ? " rank, " : " ranks, ") + options.iterations() + " allreduces of "
                + options.count() + " floats, communicators by "
                + (options.initAll() ? "ncclCommInitAll" : "ncclCommInitRank") + ", through " + gpu.bridge());

        List<Rank> ranks = new ArrayList<>();
        for (int r = 0; r < nranks; r++) {
            ranks.add(new Rank(gpu, r, nranks, options.count()));
        }
        if (options.initAll()) {
            Rank.initAllCommunicators(gpu, ranks);
        } else {
            byte[] id = gpu.uniqueId();
            ranks.forEach(rank -> rank.joinWith(id));
        }
        runRanks(ranks, scenario, options.iterations());
        System.out.println("samples: " + scenario.name() + ": " + scenario.summary());
    }

    /**
     * Runs the scenario on one thread per rank and returns when all are done. The first failure
     * ends the wait: the other ranks may be blocked for good in a collective with the failed one.
     */
    private static void runRanks(List<Rank> ranks, Scenarios.Scenario scenario, int iterations) {
        BlockingQueue<Optional<SampleFailure>> outcomes = new LinkedBlockingQueue<>();
        for (Rank rank : ranks) {
            Thread thread = new Thread(() -> outcomes.add(runRank(rank, scenario, iterations)), "rank-" + rank.rank);
            thread.start();
        }
        for (int i = 0; i < ranks.size(); i++) {
            Optional<SampleFailure> failure;
            try {
                failure = outcomes.take();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new SampleFailure("interrupted while waiting for the ranks");
            }
            if (failure.isPresent()) {
                throw failure.get();
            }
        }
    }

    private static Optional<SampleFailure> runRank(Rank rank, Scenarios.Scenario scenario, int iterations) {
        try {
            scenario.work().run(rank, iterations);
            return Optional.empty();
        } catch (RuntimeException | Error e) {
            String reason = e instanceof SampleFailure ? e.getMessage() : e.toString();
            SampleFailure failure = new SampleFailure("rank " + rank.rank + ": " + reason);
            try {
                rank.abortCommunicator();
            } catch (SampleFailure abortFailure) {
                failure.addSuppressed(abortFailure);
                System.err.println("samples: rank " + rank.rank + ": " + abortFailure.getMessage());
            }
            return Optional.of(failure);
        }
    }

    /** NCCL's version code is major*10000 + minor*100 + patch since 2.9 (major*1000 + ... before). */
    static String ncclVersion(int v) {
        return v >= 10000
                ? v / 10000 + "." + v / 100 % 100 + "." + v % 100
                : v / 1000 + "." + v / 100 % 10 + "." + v % 100;
    }

    private static void printHelp(PrintStream out) {
        out.println(USAGE);
        for (Scenarios.Scenario scenario : Scenarios.ALL.values()) {
            out.printf("  %-16s %s%n", scenario.name(), scenario.summary());
        }
        EpSample.SCENARIOS.forEach((name, summary) -> out.printf("  %-16s %s%n", name, summary));
        out.println("  --ranks N        ranks (threads, one GPU each), at most the device count; default "
                + Options.DEFAULT_RANKS);
        out.println("  --iters N        allreduces per rank; default " + Options.DEFAULT_ITERATIONS);
        out.println("  --count N        floats per allreduce; default " + Options.DEFAULT_COUNT);
        out.println("  --init rank|all  communicators by ncclCommInitRank on each rank's thread (default),"
                + " or all at once by ncclCommInitAll");
        out.println("  --bridge B       how the calls reach NCCL and CUDA: " + Bridges.HELP);
        out.println("  " + MultiRank.USAGE.substring("usage: java -jar ncclguard-samples.jar ".length())
                + ": one JVM per rank (rank 0 makes the unique id); see samples/README.md");
        out.println("Libraries: the system's libnccl.so.2 and libcudart.so.13 when libnccl.so.2 loads,"
                + " else the emulator's from -D" + GpuLibraries.EMU_PROPERTY + ", $" + GpuLibraries.EMU_ENV
                + ", ./emulator/target/emu, or ../../emulator/target/emu from this jar.");
    }
}
