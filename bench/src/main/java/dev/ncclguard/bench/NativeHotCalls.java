package dev.ncclguard.bench;

import com.sun.jna.Library;
import com.sun.jna.NativeLibrary;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Arrays;
import java.util.Map;

/**
 * What the agent's native part adds to hot calls made from C: a JNI library's loop calls
 * cudaEventQuery, cudaEventRecord, ncclAllReduce and cudaGetDevice (not tracked, so not wrapped)
 * through its PLT, bound to ncclguard's wrappers, and through the real functions' addresses, in
 * one process; and creations (cudaEventCreate + cudaEventDestroy), whose wrapper calls into Java
 * (a Java stack) when the agent's Java side is there.
 *
 * <pre>
 * java -Dncclguard.emu=emulator/target/emu -cp bench/target/ncclguard-bench.jar dev.ncclguard.bench.NativeHotCalls
 *      [--agentless native-shim/target/classes/ncclguard-native/linux-x86_64/libncclguard.so] [--iters N] [--rounds R]
 *      [--counters] [--probes]
 * </pre>
 * {@code --agentless}: promote the native library here, without the agent (its C state only, no
 * Java side); under {@code -javaagent} the agent has done it before main. With
 * {@code -Dncclguard.emu=bench/target/stub-gpu} the "real" functions are stand-ins that return at
 * once (stub_gpu.c), and what is added is the agent's own work alone. Each round runs the wrapper
 * and the real function in alternating pieces; "added" is the median of the rounds' differences.
 * {@code --counters} adds the CPU's counters per call (perf_event_open, user mode): cycles,
 * instructions, branch, L1D, dTLB, iTLB and L1I misses, wrapper against real. {@code --probes}
 * adds what the real record's footprint does to work after it, without the agent's code: the real
 * record through one more frame, and that frame plus dependent loads or stack, each against the
 * real record alone (see native_hotcalls.c).
 */
public final class NativeHotCalls {
    private static final String LIBRARY = "dev/ncclguard/bench/native/linux-x86_64/libncclguard-bench-native.so";
    private static final String[] FUNCTIONS = {"cudaEventQuery", "cudaEventRecord", "ncclAllReduce",
        "cudaGetDevice (untracked)", "cudaEventRecord (timing event)"};
    /** Loops 5-9 of the JNI library: what a real record's footprint does to the work after it. */
    private static final String[] PROBES = {"probe: one more frame", "probe: frame + 8 loads on 8 pages",
        "probe: frame + 8 loads on 1 page", "probe: frame + 256 B of stack", "probe: frame + 128 adds (450 B)",
        "probe: 128 adds (450 B) + the call", "probe: frame + 128 adds, a loop (20 B)"};
    /** dlopen's RTLD_NOW | RTLD_GLOBAL on Linux. */
    private static final int NOW_GLOBAL = 0x2 | 0x100;

    static native String setUp();

    static native long loop(int fn, boolean real, long iters);

    static native long creations(boolean real, long iters);

    /** One cudaEventCreate + cudaEventDestroy pair in a JNI call of its own. */
    static native void pair(boolean real);

    /** A framework's operation: two fresh events, records, an all-reduce, a query, two destroys (see native_hotcalls.c). */
    static native long framework(boolean real, long iters);
    /** The framework loop on the legacy default stream (true) or on the stream made at set-up. */
    static native void frameworkOnDefaultStream(boolean on);

    static native String boundTo();

    /** cudaDeviceSynchronize from C, after {@code streams} more streams were made: elapsed ns of {@code iters} calls. */
    static native long deviceSyncs(boolean real, int streams, long iters);

    /** Counts of {@code iters} calls of loop {@code fn} into {@code out} (see COUNTER_NAMES); null, or why not. */
    static native String counted(int fn, boolean real, long iters, long[] out);

    /** What {@link #counted} counts, in user mode: two groups of four, each led by cycles. */
    private static final String[] COUNTER_NAMES = {"cycles", "instructions", "branch misses", "L1D load misses",
        "cycles (2nd group)", "dTLB load misses", "iTLB misses", "L1I misses"};

    public static void main(String[] args) throws IOException {
        String agentless = null;
        long iters = 1_000_000;
        int rounds = 7;
        boolean counters = false;
        boolean probes = false;
        boolean frameworkOnly = false;
        boolean virtualFirst = false;
        boolean syncOnly = false;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--agentless" -> agentless = args[++i];
                case "--counters" -> counters = true;
                case "--probes" -> probes = true;
                case "--framework" -> frameworkOnly = true;
                case "--virtual-first" -> virtualFirst = true;
                case "--sync" -> syncOnly = true;
                case "--iters" -> iters = Long.parseLong(args[++i]);
                case "--rounds" -> rounds = Integer.parseInt(args[++i]);
                default -> {
                    System.err.println("usage: NativeHotCalls [--agentless libncclguard.so] [--iters N] [--rounds R] [--counters] [--probes] [--framework] [--virtual-first] [--sync]");
                    System.exit(2);
                }
            }
        }
        if (agentless != null) {
            // the promotion the agent makes in premain: into the global scope before the JNI library loads
            NativeLibrary.getInstance(agentless, Map.of(Library.OPTION_OPEN_FLAGS, NOW_GLOBAL));
        }
        if (virtualFirst && Runtime.version().feature() < 21) {
            System.err.println("NativeHotCalls: --virtual-first needs Java 21 or later (virtual threads)");
            System.exit(2);
        }
        GpuLibraries libs = GpuLibraries.load();
        load();
        // --virtual-first: the set-up's creations on a virtual thread, the process's first ones, and
        // then the virtual thread's pairs alone (what an application that creates from virtual
        // threads only meets)
        String[] failed = new String[1];
        if (virtualFirst) {
            onVirtualThread(() -> failed[0] = setUp());
        } else {
            failed[0] = setUp();
        }
        if (failed[0] != null) {
            throw new IllegalStateException(failed[0]);
        }
        System.out.println("NativeHotCalls: " + libs.origin + "; the JNI library's cudaEventQuery is " + boundTo());
        if (virtualFirst) {
            virtualPairs(iters, rounds);
            return;
        }
        if (syncOnly) {
            deviceSyncs(iters, rounds);
            return;
        }
        if (frameworkOnly) {
            pairs(iters, rounds);
            virtualPairs(iters, rounds);
            pairsPerCall(iters, rounds);
            framework(iters, rounds);
            return;
        }
        long allocated = 0;
        for (int fn = 0; fn < FUNCTIONS.length; fn++) {
            double[] wrapped = new double[rounds];
            double[] real = new double[rounds];
            loop(fn, false, iters / 10);
            loop(fn, true, iters / 10);
            long before = allocatedBytes();
            for (int r = 0; r < rounds; r++) {
                paired(fn, iters, r, wrapped, real);
            }
            allocated += allocatedBytes() - before;
            report(FUNCTIONS[fn], wrapped, real, "ns");
        }
        // the hot calls never enter the JVM: the timed rounds allocate nothing on the Java heap
        System.out.printf("Java heap allocated by this thread in the timed rounds (%d calls through the wrappers): %d bytes%n",
                (long) FUNCTIONS.length * rounds * iters, allocated);
        pairs(iters, rounds);
        virtualPairs(iters, rounds);
        pairsPerCall(iters, rounds);
        framework(iters, rounds);
        if (probes) {
            for (int p = 0; p < PROBES.length; p++) {
                double[] w = new double[rounds];
                double[] r = new double[rounds];
                loop(FUNCTIONS.length + p, false, iters / 10);
                for (int round = 0; round < rounds; round++) {
                    paired(FUNCTIONS.length + p, iters, round, w, r);
                }
                report(PROBES[p], w, r, "ns");
            }
        }
        if (counters) {
            counters(iters, rounds);
        }
    }

    /**
     * The CPU's counters per call, wrapper against real function: where the time added goes (the
     * instructions the wrapper runs, or the misses the real call's footprint leaves it). Each
     * side's counts are summed over the rounds' alternating pieces.
     */
    private static void counters(long iters, int rounds) {
        long piece = Math.max(256, iters / PIECES);
        long[] out = new long[COUNTER_NAMES.length];
        for (int fn = 0; fn < FUNCTIONS.length; fn++) {
            long[] w = new long[out.length];
            long[] r = new long[out.length];
            long calls = 0;
            for (int p = 0; p < rounds * 2; p++) {
                for (int side = 0; side < 2; side++) {
                    boolean real = (side ^ (p & 1)) == 1;
                    String failed = counted(fn, real, piece, out);
                    if (failed != null) {
                        System.out.println("counters: " + failed);
                        return;
                    }
                    long[] into = real ? r : w;
                    for (int i = 0; i < out.length; i++) {
                        into[i] += out[i];
                    }
                }
                calls += piece;
            }
            System.out.printf("counters per call, %s (%d calls each side):%n", FUNCTIONS[fn], calls);
            for (int i = 0; i < out.length; i++) {
                double wc = w[i] / (double) calls;
                double rc = r[i] / (double) calls;
                System.out.printf("  %-20s wrapper %9.3f, real %9.3f, added %9.3f%n", COUNTER_NAMES[i], wc, rc, wc - rc);
            }
        }
    }

    /**
     * cudaDeviceSynchronize from C on a Java thread, through the wrapper and the real function, with
     * the set-up's stream alone and then with 128 streams more (a framework's pool, as PyTorch's).
     */
    private static void deviceSyncs(long iters, int rounds) {
        long calls = Math.max(1000, iters / 100);
        for (int streams : new int[] {0, 128}) {
            double[] wrapped = new double[rounds];
            double[] real = new double[rounds];
            deviceSyncs(false, streams, calls / 10);
            deviceSyncs(true, streams, calls / 10);
            long before = allocatedBytes();
            for (int r = 0; r < rounds; r++) {
                wrapped[r] = deviceSyncs(false, streams, calls) / (double) calls / 1000.0;
                real[r] = deviceSyncs(true, streams, calls) / (double) calls / 1000.0;
            }
            long allocated = allocatedBytes() - before;
            report("cudaDeviceSynchronize, " + (streams + 1) + " streams", wrapped, real, "us");
            System.out.printf("Java heap allocated in the timed synchronizes: %d bytes for %d calls%n", allocated,
                    rounds * calls);
        }
    }

    /** cudaEventCreate + cudaEventDestroy pairs from one Java stack, through the wrappers and the real functions. */
    private static void pairs(long iters, int rounds) {
        long pairs = Math.max(1000, iters / 50);
        double[] wrapped = new double[rounds];
        double[] real = new double[rounds];
        creations(false, pairs / 10);
        creations(true, pairs / 10);
        long before = allocatedBytes();
        for (int r = 0; r < rounds; r++) {
            wrapped[r] = creations(false, pairs) / (double) pairs / 1000.0;
            real[r] = creations(true, pairs) / (double) pairs / 1000.0;
        }
        long allocated = allocatedBytes() - before;
        report("cudaEventCreate + cudaEventDestroy", wrapped, real, "us");
        System.out.printf("Java heap allocated in the timed pairs: %d bytes for %d pairs%n", allocated, rounds * pairs);
    }

    /**
     * The same pairs, all in one JNI call, on a virtual thread (Java 21 and later): each creation
     * there takes the upcall (a virtual thread's walk runs into its carrier's frames, and the native
     * part's thread is the carrier: docs/design.md), so fewer pairs a round.
     */
    private static void virtualPairs(long iters, int rounds) {
        if (Runtime.version().feature() < 21) {
            System.out.println("on a virtual thread, cudaEventCreate + cudaEventDestroy: Java 21 and later");
            return;
        }
        long pairs = Math.max(1000, iters / 500);
        double[] wrapped = new double[rounds];
        double[] real = new double[rounds];
        onVirtualThread(() -> {
            creations(false, pairs / 10);
            creations(true, pairs / 10);
        });
        for (int r = 0; r < rounds; r++) {
            int round = r;
            onVirtualThread(() -> {
                wrapped[round] = creations(false, pairs) / (double) pairs / 1000.0;
                real[round] = creations(true, pairs) / (double) pairs / 1000.0;
            });
        }
        report("on a virtual thread, cudaEventCreate + cudaEventDestroy", wrapped, real, "us");
    }

    /** Runs {@code work} on a new virtual thread and waits for it (by reflection: built for Java 17). */
    private static void onVirtualThread(Runnable work) {
        try {
            Object builder = Thread.class.getMethod("ofVirtual").invoke(null);
            Thread t = (Thread) Class.forName("java.lang.Thread$Builder").getMethod("start", Runnable.class)
                    .invoke(builder, work);
            t.join();
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** Levels of {@link #at}'s call-site tree: 2^LEVELS distinct Java stacks, all of one depth. */
    private static final int LEVELS = 15;

    /**
     * A pair (a JNI call of its own) at the Java stack that {@code path}'s low {@link #LEVELS} bits
     * choose: at each level one of two call sites, so two paths never share a stack.
     */
    private static void at(int path, int level, boolean real) {
        if (level == 0) {
            pair(real);
        } else if ((path & 1) == 0) {
            at(path >>> 1, level - 1, real);
        } else {
            at(path >>> 1, level - 1, real);
        }
    }

    /**
     * Pairs made in a JNI call each, so that the native part's memo (one per JNI call) cannot
     * serve them: at one stack over and over (the walk and a depot hit each time), and at stacks
     * never seen (the walk, the depot's insert and the upcall that shows Java the stack), each
     * round's new stacks then made again (seen: the walk alone) and through the real functions.
     * The new stacks are {@link #at}'s paths, a block of them a round, each used in one round only.
     */
    private static void pairsPerCall(long iters, int rounds) {
        int blocks = Math.min(rounds + 1, 8);
        int block = (1 << LEVELS) / 8;
        // compile at() and the JNI stub on the real side (no stack is registered), then warm the
        // wrapper's side on the last block, which the timed rounds never use
        for (int w = 0; w < 4; w++) {
            for (int p = 0; p < 1 << LEVELS; p++) {
                at(p, LEVELS, true);
            }
        }
        for (int p = 7 * block; p < 8 * block; p++) {
            at(p, LEVELS, false);
        }
        long calls = Math.max(1000, iters / 50);
        long piece = Math.max(64, calls / PIECES);
        double[] wrapped = new double[rounds];
        double[] real = new double[rounds];
        long before = allocatedBytes();
        for (int r = 0; r < rounds; r++) {
            // the pieces written out, as in paired() and framework(): a shared helper taking a lambda
            // would put its frames under each pair (the walk's cost grows with them) and allocate
            long w = 0;
            long rr = 0;
            for (int p = 0; p < PIECES; p++) {
                boolean realFirst = (p & 1) == 1;
                long a = repeat(piece, realFirst);
                long b = repeat(piece, !realFirst);
                w += realFirst ? b : a;
                rr += realFirst ? a : b;
            }
            wrapped[r] = w / (double) (piece * PIECES) / 1000.0;
            real[r] = rr / (double) (piece * PIECES) / 1000.0;
        }
        long allocated = allocatedBytes() - before;
        report("pair, a JNI call each, one stack", wrapped, real, "us");
        System.out.printf("Java heap allocated in those pairs: %d bytes for %d pairs%n", allocated, rounds * piece * PIECES);
        int newRounds = Math.min(rounds, blocks - 1);
        double[] fresh = new double[newRounds];
        double[] seen = new double[newRounds];
        double[] realAt = new double[newRounds];
        for (int r = 0; r < newRounds; r++) {
            // one call site for the three passes: the stacks must be the same frames each time
            boolean realFirst = (r & 1) == 1;
            for (int pass = 0; pass < 3; pass++) {
                boolean onReal = pass == 0 ? false : pass == 1 ? realFirst : !realFirst;
                double t = walk(r * block, block, onReal);
                if (pass == 0) {
                    fresh[r] = t;
                } else if (onReal) {
                    realAt[r] = t;
                } else {
                    seen[r] = t;
                }
            }
        }
        report("pair, a JNI call each, a new stack", fresh, realAt, "us");
        report("pair, a JNI call each, the same stacks again", seen, realAt, "us");
        System.out.printf("(%d new stacks a round, %d Java frames each)%n", block, LEVELS + 5);
    }

    /** ns of {@code n} pairs at one stack (the last path, in the block warmed and never timed as new). */
    private static long repeat(long n, boolean real) {
        int path = (1 << LEVELS) - 1;
        long t0 = System.nanoTime();
        for (long i = 0; i < n; i++) {
            at(path, LEVELS, real);
        }
        return System.nanoTime() - t0;
    }

    /** us a pair over the paths {@code [from, from + n)}. */
    private static double walk(int from, int n, boolean real) {
        long t0 = System.nanoTime();
        for (int p = from; p < from + n; p++) {
            at(p, LEVELS, real);
        }
        return (System.nanoTime() - t0) / (double) n / 1000.0;
    }

    /**
     * The framework loop (two fresh events, two records, an all-reduce, a query, two destroys per
     * operation), through the wrappers and through the real functions in alternating pieces; per
     * operation, and the ratio of the medians. Java heap allocated in the timed rounds is printed
     * too: a creation whose stack was seen before must not enter the JVM.
     */
    private static void framework(long iters, int rounds) {
        framework(iters, rounds, "");
        // PyTorch 2.11 runs a synchronous collective and its events on the current stream, the
        // legacy default one: its slot is keyed by device
        frameworkOnDefaultStream(true);
        framework(iters, rounds, ", default stream");
        frameworkOnDefaultStream(false);
    }

    private static void framework(long iters, int rounds, String where) {
        long ops = Math.max(2048, iters / 20);
        long piece = Math.max(256, ops / PIECES);
        framework(false, ops / 4);
        framework(true, ops / 4);
        double[] wrapped = new double[rounds];
        double[] real = new double[rounds];
        long before = allocatedBytes();
        for (int r = 0; r < rounds; r++) {
            long w = 0;
            long n = 0;
            long rr = 0;
            for (int p = 0; p < PIECES; p++) {
                if ((p & 1) == 0) {
                    w += framework(false, piece);
                    rr += framework(true, piece);
                } else {
                    rr += framework(true, piece);
                    w += framework(false, piece);
                }
                n += piece;
            }
            wrapped[r] = w / (double) n / 1000.0;
            real[r] = rr / (double) n / 1000.0;
        }
        long allocated = allocatedBytes() - before;
        report("framework op" + where + " (2 creates, 2 records, all-reduce, query, 2 destroys)", wrapped, real, "us");
        double[] ratios = new double[rounds];
        for (int r = 0; r < rounds; r++) {
            ratios[r] = wrapped[r] / real[r];
        }
        Arrays.sort(ratios);
        System.out.printf("framework op ratio" + where + ", wrapper / real: median %.3f (from %.3f to %.3f); Java heap allocated in "
                + "the timed rounds: %d bytes for %d operations%n", ratios[rounds / 2], ratios[0], ratios[rounds - 1],
                allocated, (long) rounds * PIECES * piece);
    }

    /** Pieces a round is cut into, wrapper and real alternating (which goes first flips each piece). */
    private static final int PIECES = 16;

    /**
     * One round: the wrapper's and the real function's loops in {@link #PIECES} alternating pieces,
     * so that what drifts during a round (a neighbour's load, the clock, a stream's depth) costs
     * both alike and the round's difference is a paired one.
     */
    private static void paired(int fn, long iters, int round, double[] wrapped, double[] real) {
        long piece = Math.max(1, iters / PIECES);
        long w = 0;
        long r = 0;
        for (int p = 0; p < PIECES; p++) {
            if ((p & 1) == 0) {
                w += loop(fn, false, piece);
                r += loop(fn, true, piece);
            } else {
                r += loop(fn, true, piece);
                w += loop(fn, false, piece);
            }
        }
        wrapped[round] = w / (double) (piece * PIECES);
        real[round] = r / (double) (piece * PIECES);
    }

    /** Bytes this thread allocated so far (HotSpot's per-thread counter), -1 where unsupported. */
    private static long allocatedBytes() {
        java.lang.management.ThreadMXBean mx = java.lang.management.ManagementFactory.getThreadMXBean();
        if (mx instanceof com.sun.management.ThreadMXBean hs && hs.isThreadAllocatedMemorySupported()) {
            return hs.getThreadAllocatedBytes(Thread.currentThread().getId());
        }
        return -1;
    }

    /**
     * "added" is the median of the rounds' paired differences; the minima of each side, and their
     * difference, follow for comparison with earlier runs.
     */
    private static void report(String what, double[] wrapped, double[] real, String unit) {
        double[] w = wrapped.clone();
        double[] r = real.clone();
        double[] d = new double[w.length];
        for (int i = 0; i < d.length; i++) {
            d[i] = wrapped[i] - real[i];
        }
        Arrays.sort(w);
        Arrays.sort(r);
        Arrays.sort(d);
        System.out.printf("%-36s wrapper %8.2f %s, real %8.2f %s, added %8.2f %s (median of %d paired rounds, "
                        + "from %.2f to %.2f; min %.2f / %.2f)%n",
                what, w[w.length / 2], unit, r[r.length / 2], unit, d[d.length / 2], unit, d.length, d[0],
                d[d.length - 1], w[0], r[0]);
    }

    private static void load() throws IOException {
        try (InputStream in = NativeHotCalls.class.getClassLoader().getResourceAsStream(LIBRARY)) {
            if (in == null) {
                throw new IllegalStateException("the bench was built without " + LIBRARY);
            }
            Path file = Files.createTempFile("ncclguard-bench-native", ".so");
            file.toFile().deleteOnExit();
            Files.copy(in, file, StandardCopyOption.REPLACE_EXISTING);
            System.load(file.toString());
        }
    }

    private NativeHotCalls() {
    }
}
