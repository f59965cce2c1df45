package dev.ncclguard.bench;

import com.sun.jna.Native;
import com.sun.jna.NativeLibrary;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.PointerByReference;
import dev.ncclguard.bootstrap.state.HookState;
import dev.ncclguard.bootstrap.state.JnaSink;
import dev.ncclguard.bootstrap.state.NativeSink;
import dev.ncclguard.samples.jni.JniCudart;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;

/**
 * cudaEventCreate + cudaEventDestroy pairs through the Java bridges (JNA interface, JNA direct,
 * JNI), in one JVM under the agent, in alternating blocks of three states: the bridge unplugged
 * ({@code HookState.jna} or {@code HookState.natives} null), tracked with stacks=off, tracked with
 * stacks=on (the tracker's switch, reached by reflection). Paired blocks share the machine's
 * conditions, which forks on a loaded machine do not; their ratios and differences resolve what
 * stacks add to a creation (docs/performance.md, "Creations through the Java bridges").
 * A fourth state, "throwable", is unplugged plus one {@code new Throwable()} per pair at the
 * application's depth: the VM's stack walk alone.
 *
 * <pre>
 * java -javaagent:agent/target/ncclguard-agent.jar=text=none -javaagent:bench/target/ncclguard-bench.jar \
 *     -Dncclguard.emu=emulator/target/emu \
 *     -cp bench/target/ncclguard-bench.jar dev.ncclguard.bench.CreationsOnOff [rounds] [blockMillis] [depth] [hotDepth]
 * </pre>
 * {@code depth}: extra Java frames between the thread's start and the loop (default 10), as an
 * application's would be; activations made once, so the VM runs them interpreted. {@code hotDepth}:
 * extra frames between the loop and each pair (default 0), made per pair: compiled ones.
 */
public final class CreationsOnOff {
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();
    private static final String[] STATES = {"off", "stacks=off", "stacks=on", "throwable"};

    /** cuda_runtime_api.h by JNA direct mapping. */
    public static final class DirectCudart {
        public static native int cudaEventCreate(PointerByReference event);

        public static native int cudaEventDestroy(Pointer event);
    }

    private static volatile Object sink;
    private static int hotDepth;

    private CreationsOnOff() {
    }

    public static void main(String[] args) throws Exception {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 20;
        long blockNanos = (args.length > 1 ? Long.parseLong(args[1]) : 50) * 1_000_000L;
        int depth = args.length > 2 ? Integer.parseInt(args[2]) : 10;
        hotDepth = args.length > 3 ? Integer.parseInt(args[3]) : 0;
        atDepth(depth, () -> run(rounds, blockNanos));
    }

    private static void atDepth(int depth, ThrowingRunnable body) throws Exception {
        if (depth > 0) {
            atDepth(depth - 1, body);
        } else {
            body.run();
        }
    }

    private interface ThrowingRunnable {
        void run() throws Exception;
    }

    private static void run(int rounds, long blockNanos) throws Exception {
        JnaSink jna = HookState.jna;
        NativeSink natives = HookState.natives;
        if (jna == null) {
            throw new IllegalStateException("run under -javaagent:ncclguard-agent.jar: its JNA bridge is not plugged in");
        }
        Method stacks = trackerSwitch(jna);
        Object tracker = trackerOf(jna);
        try (GpuSession gpu = GpuSession.open()) {
            Native.register(DirectCudart.class, NativeLibrary.getInstance(gpu.libs.cudartName));
            NativeMethodCalls.loadJni();
            PointerByReference ref = new PointerByReference();
            long[] out = new long[1];
            List<String> names = List.of("JNA interface", "JNA direct", "JNI");
            List<Runnable> pairs = List.of(
                    () -> {
                        gpu.libs.cudart.cudaEventCreate(ref);
                        gpu.libs.cudart.cudaEventDestroy(ref.getValue());
                    },
                    () -> {
                        DirectCudart.cudaEventCreate(ref);
                        DirectCudart.cudaEventDestroy(ref.getValue());
                    },
                    () -> {
                        JniCudart.cudaEventCreate(out);
                        JniCudart.cudaEventDestroy(out[0]);
                    });
            System.out.printf(Locale.ROOT, "%d rounds of %d ms blocks; CPU ns per create+destroy pair%n", rounds,
                    blockNanos / 1_000_000);
            System.out.println("| bridge | state | ns: min / median / max | added to off, paired: min / median / max |");
            System.out.println("| --- | --- | --- | --- |");
            for (int b = 0; b < pairs.size(); b++) {
                Runnable pair = pairs.get(b);
                Runnable[] states = new Runnable[STATES.length];
                boolean viaJna = b == 0;
                for (int s = 0; s < STATES.length; s++) {
                    int state = s;
                    states[s] = () -> {
                        boolean plugged = state == 1 || state == 2;
                        if (viaJna) {
                            HookState.jna = plugged ? jna : null;
                        } else {
                            HookState.natives = plugged ? natives : null;
                        }
                        invoke(stacks, tracker, state == 2);
                    };
                }
                int perBlock = calibrate(pair, blockNanos);
                List<List<Double>> ns = new ArrayList<>();
                for (int s = 0; s < STATES.length; s++) {
                    ns.add(new ArrayList<>());
                }
                for (int r = -3; r < rounds; r++) { // 3 rounds of warmup
                    for (int i = 0; i < STATES.length; i++) {
                        int s = (i + r + 3) % STATES.length; // rotated, so no state always follows another
                        states[s].run();
                        double v = block(pair, perBlock, s == 3);
                        if (r >= 0) {
                            ns.get(s).add(v);
                        }
                    }
                }
                HookState.jna = jna;
                HookState.natives = natives;
                for (int s = 0; s < STATES.length; s++) {
                    List<Double> added = new ArrayList<>();
                    for (int r = 0; r < rounds; r++) {
                        added.add(ns.get(s).get(r) - ns.get(0).get(r));
                    }
                    System.out.printf(Locale.ROOT, "| %s | %s | %s | %s |%n", names.get(b), STATES[s], spread(ns.get(s)),
                            s == 0 ? "" : spread(added));
                }
            }
        } finally {
            HookState.jna = jna;
            HookState.natives = natives;
        }
    }

    private static void invoke(Method stacks, Object tracker, boolean on) {
        try {
            stacks.invoke(tracker, on);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The tracker behind the JNA bridge: a field of type Tracker, in it or in one of its fields' objects. */
    private static Object trackerOf(Object bridge) throws IllegalAccessException {
        Object found = fieldOf(bridge, "dev.ncclguard.track.Tracker");
        if (found == null) {
            Object calls = fieldOf(bridge, "dev.ncclguard.bridge.CallProtocol");
            found = calls == null ? null : fieldOf(calls, "dev.ncclguard.track.Tracker");
        }
        if (found == null) {
            throw new IllegalStateException("no tracker in " + bridge.getClass());
        }
        return found;
    }

    private static Object fieldOf(Object o, String type) throws IllegalAccessException {
        for (Class<?> c = o.getClass(); c != null; c = c.getSuperclass()) {
            for (Field f : c.getDeclaredFields()) {
                if (f.getType().getName().equals(type)) {
                    f.setAccessible(true);
                    return f.get(o);
                }
            }
        }
        return null;
    }

    private static Method trackerSwitch(Object bridge) throws ReflectiveOperationException {
        Object tracker = trackerOf(bridge);
        return tracker.getClass().getMethod("stacks", boolean.class);
    }

    private static int calibrate(Runnable pair, long blockNanos) {
        double perPair = block(pair, 1000, false);
        for (int i = 0; i < 5; i++) {
            perPair = Math.min(perPair, block(pair, 1000, false));
        }
        return (int) Math.max(1000, blockNanos / perPair);
    }

    /** CPU ns per pair of {@code n} pairs. */
    private static double block(Runnable pair, int n, boolean throwable) {
        long start = THREADS.getCurrentThreadCpuTime();
        for (int i = 0; i < n; i++) {
            hot(pair, throwable, hotDepth);
        }
        return (double) (THREADS.getCurrentThreadCpuTime() - start) / n;
    }

    private static void hot(Runnable pair, boolean throwable, int depth) {
        if (depth > 0) {
            hot(pair, throwable, depth - 1);
            return;
        }
        pair.run();
        if (throwable) {
            sink = new Throwable("creation stack");
        }
    }

    private static String spread(List<Double> values) {
        List<Double> v = new ArrayList<>(values);
        Collections.sort(v);
        return String.format(Locale.ROOT, "%.0f / **%.0f** / %.0f", v.get(0), v.get(v.size() / 2), v.get(v.size() - 1));
    }
}
