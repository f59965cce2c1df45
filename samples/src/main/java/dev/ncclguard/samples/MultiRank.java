package dev.ncclguard.samples;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * {@code multi-rank}: the job as launchers run it, one JVM per rank. The launcher starts N JVMs
 * (its own JVM options, so an agent given to it is given to each rank), prefixes their output with
 * the rank, and once every rank has checked its allreduces tells them to exit, optionally after
 * killing one with SIGKILL. Rank 0 makes the unique id and hands it over in a file, as a
 * rendezvous store would. Each rank then releases everything ({@code --then clean}) or leaves its
 * communicator, an event and its last allreduce to process exit ({@code --then leaky}): the exit
 * where NCCL's proxy threads of the surviving ranks complain about the ones that went first.
 */
final class MultiRank {
    static final String NAME = "multi-rank";
    static final String USAGE = "usage: java -jar ncclguard-samples.jar multi-rank [--ranks N] [--then clean|leaky]"
            + " [--kill R] [--iters N] [--count N] [--wait S] [--bridge B]";
    /** What a rank prints once its results are checked; the launcher waits for every rank's. */
    static final String READY = "multi-rank: ready";
    /** What the launcher writes to each rank's stdin when it may go on to exit. */
    private static final String GO = "exit";
    private static final long ID_WAIT_MILLIS = 60_000;
    private static final long KILL_GRACE_MILLIS = 200;

    record Args(int ranks, String then, int kill, int iterations, int count, int waitSeconds,
                String bridge, int rank, Path idFile) {
        boolean launcher() {
            return rank < 0;
        }
    }

    private MultiRank() {
    }

    static boolean handles(String[] args) {
        return args.length > 0 && args[0].equals(NAME);
    }

    /** Exit status: 0 when every rank did its part (the killed one aside), 1 otherwise, 2 a bad command line. */
    static int run(String[] args) {
        Args a;
        try {
            a = parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println("samples: " + e.getMessage());
            System.err.println(USAGE);
            return 2;
        }
        try {
            if (a.launcher()) {
                return launch(a);
            }
            runRank(a);
            return 0;
        } catch (SampleFailure e) {
            System.err.println("samples: FAILED: " + e.getMessage());
            return 1;
        }
    }

    static Args parse(String[] args) {
        int ranks = 2;
        String then = "leaky";
        int kill = -1;
        int iterations = Options.DEFAULT_ITERATIONS;
        int count = Options.DEFAULT_COUNT;
        int wait = 120;
        String bridge = Options.DEFAULT_BRIDGE;
        int rank = -1;
        Path idFile = null;
        for (int i = 1; i < args.length; i++) {
            String arg = args[i];
            switch (arg) {
                case "--ranks" -> ranks = Options.positive(arg, Options.value(args, ++i, arg));
                case "--then" -> {
                    then = Options.value(args, ++i, arg);
                    if (!then.equals("clean") && !then.equals("leaky")) {
                        throw new IllegalArgumentException("--then " + then + ": expected clean or leaky");
                    }
                }
                case "--kill" -> kill = Integer.parseInt(Options.value(args, ++i, arg));
                case "--iters" -> iterations = Options.positive(arg, Options.value(args, ++i, arg));
                case "--count" -> count = Options.positive(arg, Options.value(args, ++i, arg));
                case "--wait" -> wait = Options.positive(arg, Options.value(args, ++i, arg));
                case "--bridge" -> {
                    bridge = Options.value(args, ++i, arg);
                    if (!Bridges.NAMES.contains(bridge)) {
                        throw new IllegalArgumentException("--bridge " + bridge + ": expected one of "
                                + String.join(", ", Bridges.NAMES));
                    }
                }
                // set by the launcher for the JVMs it starts
                case "--rank" -> rank = Integer.parseInt(Options.value(args, ++i, arg));
                case "--id-file" -> idFile = Path.of(Options.value(args, ++i, arg));
                default -> throw new IllegalArgumentException("unexpected argument '" + arg + "'");
            }
        }
        if (ranks < 2) {
            throw new IllegalArgumentException("--ranks " + ranks + ": multi-rank needs at least 2");
        }
        if (kill >= ranks || (kill < 0 && kill != -1)) {
            throw new IllegalArgumentException("--kill " + kill + ": expected a rank below " + ranks);
        }
        if (rank >= ranks || (rank >= 0 && idFile == null)) {
            throw new IllegalArgumentException("--rank " + rank + ": expected a rank below " + ranks + " and --id-file");
        }
        return new Args(ranks, then, kill, iterations, count, wait, bridge, rank, idFile);
    }

    // ---- the launcher ----

    private static int launch(Args a) {
        Path dir;
        try {
            dir = Files.createTempDirectory("ncclguard-multi-rank");
        } catch (IOException e) {
            throw new SampleFailure("cannot make a folder for the unique id: " + e.getMessage());
        }
        Path idFile = dir.resolve("unique-id");
        System.out.println("samples: multi-rank: " + a.ranks() + " ranks in " + a.ranks() + " JVMs, then " + a.then()
                + (a.kill() >= 0 ? ", rank " + a.kill() + " killed with SIGKILL first" : ""));
        List<Child> children = new ArrayList<>();
        try {
            for (int r = 0; r < a.ranks(); r++) {
                children.add(Child.start(r, command(a, r, idFile)));
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(a.waitSeconds());
            awaitReady(children, deadline);
            System.out.println("samples: multi-rank: every rank checked its results");
            if (a.kill() >= 0) {
                Child victim = children.get(a.kill());
                victim.process.destroyForcibly(); // SIGKILL: no shutdown hook, no destroy, no goodbye
                victim.process.waitFor();
                System.out.println("samples: multi-rank: rank " + a.kill() + " (pid " + victim.process.pid()
                        + ") killed with SIGKILL");
                // as in a real job, the others go on a moment before they exit: time for their
                // proxy threads to notice
                Thread.sleep(KILL_GRACE_MILLIS);
            }
            long told = System.nanoTime();
            for (Child child : children) {
                if (child.rank != a.kill()) {
                    child.tellToExit();
                }
            }
            boolean allZero = true;
            for (Child child : children) {
                if (child.rank == a.kill()) {
                    continue;
                }
                if (!child.process.waitFor(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS)) {
                    System.out.println("samples: multi-rank: rank " + child.rank + " (pid " + child.process.pid()
                            + ") did not exit within " + a.waitSeconds() + " s; killing it");
                    child.process.destroyForcibly().waitFor();
                    allZero = false;
                    continue;
                }
                long millis = TimeUnit.NANOSECONDS.toMillis(child.exitedAt() - told);
                int status = child.process.exitValue();
                allZero &= status == 0;
                System.out.println("samples: multi-rank: rank " + child.rank + " (pid " + child.process.pid()
                        + ") exited " + status + ", " + millis + " ms after it was told to exit");
            }
            for (Child child : children) {
                child.drain();
            }
            System.out.println("samples: " + NAME + ": " + (allZero ? "every rank exited 0" : "a rank failed"));
            return allZero ? 0 : 1;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new SampleFailure("interrupted");
        } finally {
            for (Child child : children) {
                child.process.destroyForcibly();
            }
            try {
                Files.deleteIfExists(idFile);
                Files.deleteIfExists(dir);
            } catch (IOException e) {
                // a temporary folder left behind
            }
        }
    }

    /** Until every rank is ready; a rank that exits first, or the deadline, ends the run. */
    private static void awaitReady(List<Child> children, long deadline) throws InterruptedException {
        while (true) {
            boolean all = true;
            for (Child child : children) {
                if (child.ready.getCount() == 0) {
                    continue;
                }
                all = false;
                if (!child.process.isAlive()) {
                    child.drain();
                    throw new SampleFailure("rank " + child.rank + " exited " + child.process.exitValue()
                            + " before it was ready");
                }
            }
            if (all) {
                return;
            }
            if (System.nanoTime() - deadline > 0) {
                throw new SampleFailure("not every rank was ready within the wait");
            }
            Thread.sleep(20);
        }
    }

    /** This JVM's java, options (an agent, -D...) and class path, running one rank. */
    private static List<String> command(Args a, int rank, Path idFile) {
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        List<String> options = ManagementFactory.getRuntimeMXBean().getInputArguments();
        cmd.addAll(options);
        // the samples jar's manifest says so for the launcher; a rank started with -cp needs it
        // said on its command line (Java 22+ warns at JNA's first native call otherwise)
        if (Runtime.version().feature() >= 22 && options.stream().noneMatch(o -> o.startsWith("--enable-native-access"))) {
            cmd.add("--enable-native-access=ALL-UNNAMED");
        }
        cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), Samples.class.getName(), NAME,
                "--rank", Integer.toString(rank), "--ranks", Integer.toString(a.ranks()),
                "--id-file", idFile.toString(), "--then", a.then(),
                "--iters", Integer.toString(a.iterations()), "--count", Integer.toString(a.count()),
                "--bridge", a.bridge()));
        return cmd;
    }

    /** One rank's JVM, its output copied to ours line by line with a prefix. */
    private static final class Child {
        final int rank;
        final Process process;
        final CountDownLatch ready = new CountDownLatch(1);
        private final List<Thread> pumps = new ArrayList<>();
        private volatile long exitedAt;

        private Child(int rank, Process process) {
            this.rank = rank;
            this.process = process;
        }

        static Child start(int rank, List<String> command) {
            Process process;
            try {
                process = new ProcessBuilder(command).start();
            } catch (IOException e) {
                throw new SampleFailure("cannot start rank " + rank + ": " + e.getMessage());
            }
            Child child = new Child(rank, process);
            child.pump(process.getInputStream(), System.out);
            child.pump(process.getErrorStream(), System.err);
            process.onExit().thenRun(() -> child.exitedAt = System.nanoTime());
            return child;
        }

        private void pump(InputStream from, PrintStream to) {
            Thread t = new Thread(() -> {
                try (BufferedReader in = new BufferedReader(new InputStreamReader(from, StandardCharsets.UTF_8))) {
                    String line;
                    while ((line = in.readLine()) != null) {
                        if (line.equals(READY)) {
                            ready.countDown();
                        }
                        synchronized (to) {
                            to.println("[rank " + rank + "] " + line);
                        }
                    }
                } catch (IOException e) {
                    // the rank is gone
                }
            }, "rank-" + rank + "-output");
            t.setDaemon(true);
            t.start();
            pumps.add(t);
        }

        void tellToExit() {
            try {
                OutputStream in = process.getOutputStream();
                in.write((GO + "\n").getBytes(StandardCharsets.UTF_8));
                in.flush();
                in.close();
            } catch (IOException e) {
                // it is gone already; its exit status says how
            }
        }

        long exitedAt() {
            long at = exitedAt;
            return at != 0 ? at : System.nanoTime();
        }

        /** Waits (briefly) for the last lines of its output. */
        void drain() throws InterruptedException {
            for (Thread t : pumps) {
                t.join(5_000);
            }
        }
    }

    // ---- one rank ----

    private static void runRank(Args a) {
        GpuLibraries libraries = GpuLibraries.load();
        System.out.println("samples: " + libraries.describe());
        Gpu gpu = Bridges.open(a.bridge(), libraries);
        Rank rank = new Rank(gpu, a.rank(), a.ranks(), a.count());
        rank.useDevice();
        rank.allocate();
        rank.joinWith(uniqueId(gpu, a));
        rank.initCommunicator();
        for (int i = 0; i < a.iterations(); i++) {
            rank.allReduce();
        }
        rank.synchronizeStream();
        rank.checkResult();
        System.out.println(READY);
        System.out.flush();
        awaitGo();
        if (a.then().equals("clean")) {
            // a collective of every rank: they were all told to go at the same time
            rank.destroyCommunicator();
            rank.free();
            System.out.println("rank " + a.rank() + ": communicator destroyed, stream and buffers freed");
        } else {
            // as Scenarios.leaky: one more step nobody waits for, then straight to exit
            rank.allReduce();
            long lastStep = rank.createEvent();
            rank.recordEvent(lastStep);
            System.out.println("rank " + a.rank() + ": exiting with its communicator, an event and an allreduce left");
        }
    }

    /** Rank 0 makes the id and publishes it atomically; the others wait for the file. */
    private static byte[] uniqueId(Gpu gpu, Args a) {
        Path file = a.idFile();
        try {
            if (a.rank() == 0) {
                byte[] id = gpu.uniqueId();
                Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
                Files.writeString(tmp, HexFormat.of().formatHex(id));
                Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE);
                return id;
            }
            long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ID_WAIT_MILLIS);
            while (!Files.exists(file)) {
                if (System.nanoTime() - until > 0) {
                    throw new SampleFailure("rank 0 published no unique id in " + file + " within " + ID_WAIT_MILLIS + " ms");
                }
                Thread.sleep(10);
            }
            return HexFormat.of().parseHex(Files.readString(file).strip());
        } catch (IOException e) {
            throw new SampleFailure("cannot exchange the unique id through " + file + ": " + e.getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new SampleFailure("interrupted while waiting for the unique id");
        }
    }

    private static void awaitGo() {
        try {
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            String line;
            while ((line = in.readLine()) != null && !line.equals(GO)) {
                // anything else is not for us
            }
        } catch (IOException e) {
            // a closed stdin means go as well
        }
    }
}
