package dev.ncclguard.samples;

import com.sun.jna.ptr.IntByReference;
import dev.ncclguard.samples.ep.EpRuntime;
import dev.ncclguard.samples.ep.EpStaticRuntime;
import dev.ncclguard.samples.ep.ScudartRuntime;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import javax.management.ObjectName;

/**
 * The DeepEP-style scenarios: each rank, a Java thread, drives a runtime whose C library does all
 * the NCCL and CUDA work ({@link EpRuntime}, or {@link EpStaticRuntime} with NCCL linked inside
 * it); the Java side only calls open, dispatch and close.
 */
final class EpSample {
    /** The scenarios and what each shows. */
    static final Map<String, String> SCENARIOS = new LinkedHashMap<>();
    /** Worker threads of ep-stress, each opening and closing runtimes, and the threads that query meanwhile. */
    static final int STRESS_WORKERS = 16;
    static final int STRESS_QUERIERS = 4;

    static {
        SCENARIOS.put("ep-clean", "each rank opens the runtime, dispatches --iters steps, closes it (result checked,"
                + " everything released)");
        SCENARIOS.put("ep-leaky", "each rank opens the runtime and dispatches --iters steps, never closes it:"
                + " communicator, stream and event made in C left to process exit");
        SCENARIOS.put("ep-pthread", "as ep-leaky, with the communicator made on a thread of the runtime's own"
                + " (no Java frames there)");
        SCENARIOS.put("ep-inflight", "each rank dispatches a step and waits for it, then dispatches --iters more"
                + " and exits at once: collectives still in flight at exit (NCCLEMU_OP_DELAY_US makes them last)");
        SCENARIOS.put("ep-events", "each rank opens the runtime, then --iters times forward() and backward(), each"
                + " making 100 events in one call of the runtime (through the same timedOps()), the last one left;"
                + " closes the runtime: each leaked event's stack names its own caller");
        SCENARIOS.put("ep-stacks", "rank 0 opens the runtime and makes 100 events in one call of it (the last one"
                + " left) through frames of each kind a stack holds (a plain call, a lambda, reflection, a method handle,"
                + " a constructor, 80 frames of recursion), each twice: on a thread that made events at another stack"
                + " first, and on a fresh thread; each leaked event's stack names the frames that made it");
        SCENARIOS.put("ep-redefine", "rank 0 makes 100 events in one call of the runtime (the last one left) through"
                + " Shifted.make(), twice at one stack on each of two threads (one made events at another stack first),"
                + " the second time after Shifted was redefined with the class file -Dsamples.redefine-with names (the"
                + " samples jar is a -javaagent too): each leaked event's stack reads the lines of the version that made it");
        SCENARIOS.put("ep-virtual", "the ranks run on virtual threads (Java 21+), so the process's first creations"
                + " are a virtual thread's; rank 0 runs three more one after another, each making 100 events in one"
                + " call of the runtime twice at one stack (the last one of each call left): each leaked event names"
                + " its own virtual thread and the virtual thread's frames");
        SCENARIOS.put("ep-static-clean", "as ep-clean, through the runtime with NCCL linked inside it (hidden)");
        SCENARIOS.put("ep-static-leaky", "as ep-leaky, through the runtime with NCCL linked inside it (hidden)");
        SCENARIOS.put("ep-serve", "opens the runtime, dispatches a step and closes it (a communicator made and"
                + " destroyed in C), then waits for commands on stdin: 'leak' opens one more runtime it never closes,"
                + " 'stop' ends; a JVM to attach to after its library was used");
        SCENARIOS.put("ep-scudart-clean", "a runtime with the CUDA runtime linked in statically (nvcc's default)"
                + " makes a stream and an event, records the event --iters times, waits for both and releases them");
        SCENARIOS.put("ep-scudart-leaky", "as ep-scudart-clean, never waiting or releasing: its stream and event leak");
        SCENARIOS.put("ep-stress", STRESS_WORKERS + " threads each open, dispatch, poll and close one-rank runtimes"
                + " --iters times while " + STRESS_QUERIERS + " others poll runtimes of their own and ask the"
                + " ncclguard MBean, if there is one, for its live report; everything released");
    }

    private EpSample() {
    }

    /** The runtime of a scenario: plain, or with NCCL linked inside. */
    private record Runtime(boolean statik) {
        void load() {
            if (statik) {
                EpStaticRuntime.load();
            } else {
                EpRuntime.load();
            }
        }

        byte[] newGroupId() {
            return statik ? EpStaticRuntime.newGroupId() : EpRuntime.newGroupId();
        }

        long open(byte[] group, int nranks, int rank, int device, int count, boolean onLibraryThread) {
            return statik ? EpStaticRuntime.open(group, nranks, rank, device, count, onLibraryThread)
                    : EpRuntime.open(group, nranks, rank, device, count, onLibraryThread);
        }

        int dispatch(long runtime) {
            return statik ? EpStaticRuntime.dispatch(runtime) : EpRuntime.dispatch(runtime);
        }

        int poll(long runtime) {
            return statik ? EpStaticRuntime.poll(runtime) : EpRuntime.poll(runtime);
        }

        int close(long runtime) {
            if (statik && Boolean.getBoolean(EpStaticRuntime.TAIL_CLOSE_PROPERTY)) {
                int r = EpStaticRuntime.close(runtime);
                return r == 0 ? -1 : r - 1;
            }
            return statik ? EpStaticRuntime.close(runtime) : EpRuntime.close(runtime);
        }
    }

    static void run(Options options, GpuLibraries libraries) {
        IntByReference count = new IntByReference();
        int status = libraries.cudart.cudaGetDeviceCount(count);
        if (status != 0 || count.getValue() < 1) {
            throw new SampleFailure("no CUDA device (cudaGetDeviceCount: " + status + ")");
        }
        String scenario = options.scenario();
        if (scenario.startsWith("ep-scudart-")) {
            scudart(scenario, options);
            return;
        }
        Runtime runtime = new Runtime(scenario.startsWith("ep-static-"));
        runtime.load();
        if (scenario.equals("ep-serve")) {
            serve(runtime, options);
            return;
        }
        if (scenario.equals("ep-stress")) {
            stress(runtime, options, count.getValue());
            return;
        }
        int nranks = Math.min(options.ranks(), count.getValue());
        System.out.println("samples: " + scenario + " on " + nranks + (nranks == 1 ? " rank, " : " ranks, ")
                + options.iterations() + " steps of " + options.count() + " floats, through the EP runtime's C library");
        byte[] group = runtime.newGroupId();
        List<Thread> threads = new ArrayList<>();
        List<Throwable> failures = new ArrayList<>();
        for (int r = 0; r < nranks; r++) {
            int rank = r;
            Runnable work = () -> rankWork(runtime, scenario, group, nranks, rank, options);
            threads.add(scenario.equals("ep-virtual") ? virtualThread("rank-" + r, failures, work)
                    : thread("rank-" + r, failures, work));
        }
        joinAll(threads);
        rethrowFirst(failures);
        if (scenario.equals("ep-inflight")) {
            Object n = agentAttribute("NcclOpsInFlight");
            if (n != null) {
                System.out.println("samples: ep-inflight: NCCL operations in flight now (the agent's MBean): " + n);
            }
        }
        System.out.println("samples: " + scenario + ": " + SCENARIOS.get(scenario));
    }

    /** ep-serve: the library loaded and used before an attach, then a leak on command after it. */
    private static void serve(Runtime runtime, Options options) {
        long first = openRuntime(runtime, runtime.newGroupId(), 1, 0, options.count(), false);
        step(runtime, first);
        if (runtime.close(first) >= 0) {
            throw new SampleFailure("ep-serve: the first step's result is wrong");
        }
        System.out.println("samples: ep-serve: ready, pid " + ProcessHandle.current().pid() + "; the runtime was"
                + " opened and closed once; commands on stdin: leak, stop");
        try (java.io.BufferedReader in = new java.io.BufferedReader(new java.io.InputStreamReader(System.in,
                java.nio.charset.StandardCharsets.UTF_8))) {
            String line;
            while ((line = in.readLine()) != null) {
                switch (line.trim()) {
                    case "leak" -> {
                        leakRuntime(runtime, options);
                        System.out.println("samples: ep-serve: leaked: a runtime opened and never closed");
                    }
                    case "stop" -> {
                        System.out.println("samples: ep-serve: stopping");
                        return;
                    }
                    case "" -> { }
                    default -> System.out.println("samples: ep-serve: unknown command '" + line.trim() + "' (leak, stop)");
                }
            }
        } catch (java.io.IOException e) {
            throw new SampleFailure("ep-serve: cannot read stdin: " + e.getMessage());
        }
    }

    private static void leakRuntime(Runtime runtime, Options options) {
        step(runtime, openRuntime(runtime, runtime.newGroupId(), 1, 0, options.count(), false));
    }

    /** ep-scudart-*: the static cudart's stream and event, on the main thread. */
    private static void scudart(String scenario, Options options) {
        ScudartRuntime.load();
        long runtime;
        try {
            runtime = ScudartRuntime.open();
            for (int i = 0; i < options.iterations(); i++) {
                ScudartRuntime.step(runtime);
            }
            if (scenario.endsWith("-clean")) {
                ScudartRuntime.close(runtime);
            }
        } catch (IllegalStateException e) {
            throw new SampleFailure(e.getMessage());
        }
        System.out.println("samples: " + scenario + ": " + SCENARIOS.get(scenario));
    }

    /** One rank: the names here are what a report's Java frames show. */
    private static void rankWork(Runtime runtime, String scenario, byte[] group, int nranks, int rank,
            Options options) {
        long handle = openRuntime(runtime, group, nranks, rank, options.count(), scenario.equals("ep-pthread"));
        if (scenario.equals("ep-inflight")) {
            step(runtime, handle);
            while (runtime.poll(handle) != 0) { // one step seen done: NCCL's profiler has told a finished one
                try {
                    Thread.sleep(1);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new SampleFailure("interrupted while waiting for the first step");
                }
            }
        }
        for (int i = 0; i < options.iterations(); i++) {
            step(runtime, handle);
            if (scenario.equals("ep-events")) {
                forward(handle);
                backward(handle);
            }
            if (scenario.equals("ep-stacks") && rank == 0) {
                stacks(handle);
            }
            if (scenario.equals("ep-redefine") && rank == 0) {
                redefine(handle);
            }
            if (scenario.equals("ep-virtual") && rank == 0) {
                virtualThreads(handle);
            }
        }
        if (scenario.endsWith("-clean") || scenario.equals("ep-events")) {
            int wrong = runtime.close(handle);
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

    private static long openRuntime(Runtime runtime, byte[] group, int nranks, int rank, int count,
            boolean onLibraryThread) {
        try {
            return runtime.open(group, nranks, rank, rank, count, onLibraryThread);
        } catch (IllegalStateException e) {
            throw new SampleFailure("rank " + rank + ": " + e.getMessage());
        }
    }

    // ep-events: two callers of one native site at the same depth
    private static void forward(long handle) {
        timedOps(handle);
    }

    private static void backward(long handle) {
        timedOps(handle);
    }

    /** ep-stacks: how many kinds of frames {@link #variant} reaches the native site through. */
    private static final int STACK_VARIANTS = 6;

    /**
     * ep-stacks: each variant on a thread "stacks-V-after" that made events at forward()'s stack
     * first, and on a fresh thread "stacks-V-first"; above variant() their stacks are the same.
     */
    private static void stacks(long handle) {
        for (int v = 0; v < STACK_VARIANTS; v++) {
            int variant = v;
            List<Throwable> failures = new ArrayList<>();
            Thread after = thread("stacks-" + v + "-after", failures, () -> {
                forward(handle);
                variant(handle, variant);
            });
            joinAll(List.of(after));
            Thread first = thread("stacks-" + v + "-first", failures, () -> variant(handle, variant));
            joinAll(List.of(first));
            rethrowFirst(failures);
        }
    }

    private static void variant(long handle, int variant) {
        try {
            switch (variant) {
                case 0 -> backward(handle);
                case 1 -> {
                    Runnable r = () -> timedOps(handle);
                    r.run();
                }
                case 2 -> EpSample.class.getDeclaredMethod("backward", long.class).invoke(null, handle);
                case 3 -> java.lang.invoke.MethodHandles.lookup().findStatic(EpSample.class, "backward",
                        java.lang.invoke.MethodType.methodType(void.class, long.class)).invokeExact(handle);
                case 4 -> new TimedOps(handle);
                default -> deep(handle, 80);
            }
        } catch (SampleFailure e) {
            throw e;
        } catch (Throwable e) {
            throw new SampleFailure("ep-stacks: variant " + variant + ": " + e);
        }
    }

    private static void deep(long handle, int n) {
        if (n == 0) {
            timedOps(handle);
        } else {
            deep(handle, n - 1);
        }
    }

    /**
     * ep-redefine: on "redefine-after" (events made at forward()'s stack first: its next stacks are
     * named late, from the native depot) and on "redefine-first" (its first event takes the upcall),
     * Shifted.make() twice at one stack, Shifted redefined in between.
     */
    private static void redefine(long handle) {
        java.lang.instrument.Instrumentation inst = Redefiner.instrumentation();
        String with = System.getProperty("samples.redefine-with");
        if (inst == null || with == null) {
            throw new SampleFailure("ep-redefine: run it with -javaagent:<the samples jar> and"
                    + " -Dsamples.redefine-with=<Shifted's new class file>");
        }
        java.util.concurrent.CountDownLatch made = new java.util.concurrent.CountDownLatch(2);
        java.util.concurrent.CountDownLatch redefined = new java.util.concurrent.CountDownLatch(1);
        List<Throwable> failures = new ArrayList<>();
        List<Thread> threads = List.of(
                thread("redefine-after", failures, () -> {
                    forward(handle);
                    twice(handle, made, redefined);
                }),
                thread("redefine-first", failures, () -> twice(handle, made, redefined)));
        try {
            made.await();
            byte[] shifted = java.nio.file.Files.readAllBytes(java.nio.file.Path.of(with));
            inst.redefineClasses(new java.lang.instrument.ClassDefinition(Shifted.class, shifted));
        } catch (Exception e) {
            throw new SampleFailure("ep-redefine: " + e);
        } finally {
            redefined.countDown();
        }
        joinAll(threads);
        rethrowFirst(failures);
    }

    /** Shifted.make() at one stack twice: before and after Shifted is redefined. */
    private static void twice(long handle, java.util.concurrent.CountDownLatch made,
            java.util.concurrent.CountDownLatch redefined) {
        for (int i = 0; i < 2; i++) {
            if (i == 1) {
                made.countDown();
                try {
                    redefined.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new SampleFailure("ep-redefine: interrupted");
                }
            }
            Shifted.make(handle);
        }
    }

    /** ep-redefine: the class redefined (its new version's lines differ, its bytecode does not). */
    static final class Shifted {
        private Shifted() {
        }

        static void make(long handle) {
            timedOps(handle);
        }
    }

    /**
     * ep-virtual: virtual threads "virtual-0" to "virtual-2", one after another (on one carrier
     * where the scheduler has one), each making events twice at one stack.
     */
    private static void virtualThreads(long handle) {
        List<Throwable> failures = new ArrayList<>();
        for (int v = 0; v < 3; v++) {
            joinAll(List.of(virtualThread("virtual-" + v, failures, () -> virtualTwice(handle))));
        }
        rethrowFirst(failures);
    }

    /** As {@link #thread}, a virtual one (by reflection: the samples are compiled for Java 17). */
    private static Thread virtualThread(String name, List<Throwable> failures, Runnable work) {
        if (java.lang.Runtime.version().feature() < 21) {
            throw new SampleFailure("ep-virtual needs Java 21 or later (virtual threads)");
        }
        try {
            Class<?> builder = Class.forName("java.lang.Thread$Builder");
            Object b = builder.getMethod("name", String.class).invoke(Thread.class.getMethod("ofVirtual").invoke(null), name);
            return (Thread) builder.getMethod("start", Runnable.class).invoke(b, collecting(failures, work));
        } catch (ReflectiveOperationException e) {
            throw new SampleFailure("ep-virtual: " + e);
        }
    }

    private static void virtualTwice(long handle) {
        for (int i = 0; i < 2; i++) {
            timedOps(handle);
        }
    }

    /** ep-stacks: a constructor's frame. */
    private static final class TimedOps {
        TimedOps(long handle) {
            timedOps(handle);
        }
    }

    private static void timedOps(long handle) {
        try {
            EpRuntime.timed(handle, 100);
        } catch (IllegalStateException e) {
            throw new SampleFailure(e.getMessage());
        }
    }

    private static void step(Runtime runtime, long handle) {
        try {
            runtime.dispatch(handle);
        } catch (IllegalStateException e) {
            throw new SampleFailure(e.getMessage());
        }
    }

    /**
     * Many threads making and releasing communicators, streams and events in C at once, while
     * others query their own events in C and the agent's live report (its MBean) reads every
     * handle's state: nothing may leak, nothing may crash.
     */
    private static void stress(Runtime runtime, Options options, int devices) {
        System.out.println("samples: ep-stress: " + STRESS_WORKERS + " threads x " + options.iterations()
                + " runtimes, " + STRESS_QUERIERS + " querying threads");
        AtomicBoolean done = new AtomicBoolean();
        AtomicLong opened = new AtomicLong();
        AtomicLong reports = new AtomicLong();
        List<Throwable> failures = new ArrayList<>();
        List<Thread> workers = new ArrayList<>();
        for (int w = 0; w < STRESS_WORKERS; w++) {
            int device = w % devices;
            workers.add(thread("worker-" + w, failures, () -> {
                for (int i = 0; i < options.iterations(); i++) {
                    long handle = runtime.open(runtime.newGroupId(), 1, 0, device, options.count(), false);
                    runtime.dispatch(handle);
                    while (runtime.poll(handle) != 0) {
                        Thread.onSpinWait();
                    }
                    if (runtime.close(handle) >= 0) {
                        throw new SampleFailure("a stress runtime's result is wrong");
                    }
                    opened.incrementAndGet();
                }
            }));
        }
        List<Thread> queriers = new ArrayList<>();
        for (int q = 0; q < STRESS_QUERIERS; q++) {
            int device = q % devices;
            boolean asksTheAgent = q == 0;
            queriers.add(thread("querier-" + q, failures, () -> {
                long handle = runtime.open(runtime.newGroupId(), 1, 0, device, options.count(), false);
                while (!done.get()) {
                    runtime.dispatch(handle);
                    runtime.poll(handle);
                    if (asksTheAgent && liveReport() != null) {
                        reports.incrementAndGet();
                    }
                }
                while (runtime.poll(handle) != 0) {
                    Thread.onSpinWait();
                }
                runtime.close(handle);
            }));
        }
        joinAll(workers);
        done.set(true);
        joinAll(queriers);
        rethrowFirst(failures);
        System.out.println("samples: ep-stress: " + opened.get() + " runtimes opened and closed, " + reports.get()
                + " live reports read meanwhile");
    }

    /**
     * An attribute of the agent's MBean, when the JVM runs the agent; null otherwise. The agent
     * registers it shortly after the platform MBean server exists: asked for here, so waited for.
     */
    private static Object agentAttribute(String name) {
        long deadline = System.nanoTime() + 2_000_000_000L;
        while (true) {
            try {
                return ManagementFactory.getPlatformMBeanServer().getAttribute(new ObjectName("dev.ncclguard:type=Tracker"), name);
            } catch (javax.management.InstanceNotFoundException e) {
                if (System.nanoTime() > deadline) {
                    return null; // no agent
                }
                try {
                    Thread.sleep(10);
                } catch (InterruptedException stop) {
                    Thread.currentThread().interrupt();
                    return null;
                }
            } catch (Exception e) {
                return null;
            }
        }
    }

    /** The agent's live report through its MBean, when the JVM runs the agent and it registered it. */
    private static String liveReport() {
        try {
            return (String) ManagementFactory.getPlatformMBeanServer()
                    .invoke(new ObjectName("dev.ncclguard:type=Tracker"), "reportJson", null, null);
        } catch (Exception e) {
            return null; // no agent, or not registered yet
        }
    }

    private static Thread thread(String name, List<Throwable> failures, Runnable work) {
        Thread t = new Thread(collecting(failures, work), name);
        t.start();
        return t;
    }

    /** {@code work}, its failure added to {@code failures} (for rethrowFirst) rather than thrown. */
    private static Runnable collecting(List<Throwable> failures, Runnable work) {
        return () -> {
            try {
                work.run();
            } catch (RuntimeException e) {
                synchronized (failures) {
                    failures.add(e);
                }
            }
        };
    }

    private static void joinAll(List<Thread> threads) {
        for (Thread t : threads) {
            try {
                t.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new SampleFailure("interrupted while waiting for the ranks");
            }
        }
    }

    private static void rethrowFirst(List<Throwable> failures) {
        if (!failures.isEmpty()) {
            Throwable first = failures.get(0);
            throw first instanceof SampleFailure f ? f : new SampleFailure(first.getMessage());
        }
    }
}
