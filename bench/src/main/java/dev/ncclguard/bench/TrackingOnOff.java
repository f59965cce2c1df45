package dev.ncclguard.bench;

import com.sun.jna.ptr.IntByReference;
import dev.ncclguard.bench.jna.Nccl;
import dev.ncclguard.bootstrap.state.HookState;
import dev.ncclguard.bootstrap.state.JnaSink;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.function.IntSupplier;

/**
 * Whole JNA interface calls with the agent's tracking on and off in one JVM, alternating in short
 * blocks on one thread. Between forks the CPU time of the same call swings by 10-30% on a shared
 * machine, which hides a 2% difference; blocks 50 ms apart on one thread share their conditions,
 * so their paired ratios resolve it. Run under the agent: "off" unplugs its JNA bridge
 * ({@code HookState.jna = null}), so the code woven into Function.invoke still runs its four
 * null-checked hook calls; the ratio is what tracking adds on top (AgentPath's untracked case
 * measures the rest, 1-3 ns).
 *
 * <pre>
 * java -javaagent:agent/target/ncclguard-agent.jar=text=none,stacks=off -javaagent:bench/target/ncclguard-bench.jar \
 *     -Dncclguard.emu=emulator/target/emu \
 *     -cp bench/target/ncclguard-bench.jar dev.ncclguard.bench.TrackingOnOff [pairs] [blockMillis]
 * </pre>
 */
public final class TrackingOnOff {
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

    private TrackingOnOff() {
    }

    public static void main(String[] args) {
        int pairs = args.length > 0 ? Integer.parseInt(args[0]) : 30;
        long blockNanos = (args.length > 1 ? Long.parseLong(args[1]) : 50) * 1_000_000L;
        JnaSink bridge = HookState.jna;
        if (bridge == null) {
            throw new IllegalStateException("run under -javaagent:ncclguard-agent.jar: its JNA bridge is not plugged in");
        }
        IntByReference intOut = new IntByReference();
        try (GpuSession gpu = GpuSession.open()) {
            List<String> names = List.of("cudaEventQuery", "cudaEventRecord", "ncclAllReduce", "cudaGetDevice");
            List<IntSupplier> calls = List.of(
                    () -> gpu.libs.cudart.cudaEventQuery(gpu.event),
                    () -> gpu.libs.cudart.cudaEventRecord(gpu.event, gpu.stream),
                    () -> gpu.libs.nccl.ncclAllReduce(gpu.send, gpu.recv, GpuSession.COUNT, Nccl.ncclFloat32,
                            Nccl.ncclSum, gpu.comm, gpu.stream),
                    () -> gpu.libs.cudart.cudaGetDevice(intOut));
            System.out.printf(Locale.ROOT, "%d pairs of %d ms blocks; CPU ns per call, tracking on / off%n",
                    pairs, blockNanos / 1_000_000);
            System.out.println("| call | on: min / median / max | off: min / median / max | on/off paired: min / q1 / median / q3 / max |");
            System.out.println("| --- | --- | --- | --- |");
            for (int c = 0; c < calls.size(); c++) {
                IntSupplier call = calls.get(c);
                int perBlock = calibrate(call, blockNanos, gpu);
                for (int i = 0; i < 20; i++) { // warmup: both states, so that the JIT has seen both
                    HookState.jna = i % 2 == 0 ? bridge : null;
                    block(call, perBlock, gpu);
                }
                List<Double> on = new ArrayList<>();
                List<Double> off = new ArrayList<>();
                List<Double> ratios = new ArrayList<>();
                for (int p = 0; p < pairs; p++) {
                    boolean onFirst = p % 2 == 0;
                    HookState.jna = onFirst ? bridge : null;
                    double first = block(call, perBlock, gpu);
                    HookState.jna = onFirst ? null : bridge;
                    double second = block(call, perBlock, gpu);
                    double withTracking = onFirst ? first : second;
                    double without = onFirst ? second : first;
                    on.add(withTracking);
                    off.add(without);
                    ratios.add(withTracking / without);
                }
                HookState.jna = bridge;
                System.out.printf(Locale.ROOT, "| %s | %s | %s | %s |%n", names.get(c), spread(on, "%.1f"),
                        spread(off, "%.1f"), quartiles(ratios));
            }
        } finally {
            HookState.jna = bridge;
        }
    }

    /** Calls per block, so that a block takes about {@code blockNanos} of CPU. */
    private static int calibrate(IntSupplier call, long blockNanos, GpuSession gpu) {
        int n = 1000;
        double perCall = block(call, n, gpu);
        for (int i = 0; i < 5; i++) {
            perCall = Math.min(perCall, block(call, n, gpu));
        }
        return (int) Math.max(1000, blockNanos / perCall);
    }

    /** CPU ns per call of {@code n} calls; the stream is drained afterwards, outside the count. */
    private static double block(IntSupplier call, int n, GpuSession gpu) {
        long sink = 0;
        long start = THREADS.getCurrentThreadCpuTime();
        for (int i = 0; i < n; i++) {
            sink += call.getAsInt();
        }
        long spent = THREADS.getCurrentThreadCpuTime() - start;
        gpu.synchronize();
        if (sink == Long.MIN_VALUE) {
            System.out.println(sink); // keeps the results alive
        }
        return (double) spent / n;
    }

    private static String spread(List<Double> values, String format) {
        List<Double> v = new ArrayList<>(values);
        Collections.sort(v);
        return String.format(Locale.ROOT, format + " / " + format + " / " + format, v.get(0), at(v, 0.5),
                v.get(v.size() - 1));
    }

    private static String quartiles(List<Double> values) {
        List<Double> v = new ArrayList<>(values);
        Collections.sort(v);
        return String.format(Locale.ROOT, "%.3f / %.3f / **%.3f** / %.3f / %.3f", v.get(0), at(v, 0.25), at(v, 0.5),
                at(v, 0.75), v.get(v.size() - 1));
    }

    private static double at(List<Double> sorted, double q) {
        double pos = q * (sorted.size() - 1);
        int lo = (int) Math.floor(pos);
        int hi = (int) Math.ceil(pos);
        return sorted.get(lo) + (sorted.get(hi) - sorted.get(lo)) * (pos - lo);
    }
}
