package dev.ncclguard.bench;

import static dev.ncclguard.bench.GpuLibraries.cuda;

import com.sun.jna.Pointer;
import com.sun.jna.ptr.PointerByReference;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;

/**
 * An application that holds many live handles, run in a child JVM by {@link ProcessBench}:
 * <ul>
 * <li>{@code memory events|comms N}: the heap in use after a full GC before and after creating N
 * events (or one-rank communicators) it keeps alive; prints {@code heap-delta-bytes=}. Run with
 * and without the agent, the difference divided by N is what the agent keeps per live handle.</li>
 * <li>{@code exit N}: creates N events and records each on one stream, never waiting for them:
 * N leaks for the exit report. Its shutdown hook, the last of the application's, prints
 * {@code hook-end-ms=} and the process's CPU time so far, {@code hook-cpu-ns=}; the agent's exit
 * hook starts after it.</li>
 * </ul>
 */
public final class ManyHandles {
    private ManyHandles() {
    }

    public static void main(String[] args) throws InterruptedException {
        if (args.length != 3 && !(args.length == 2 && args[0].equals("exit"))) {
            System.err.println("usage: ManyHandles memory events|comms N | ManyHandles exit N");
            System.exit(2);
        }
        GpuLibraries libs = GpuLibraries.load();
        cuda(libs.cudart.cudaSetDevice(0), "cudaSetDevice");
        if (args[0].equals("exit")) {
            exit(libs, Integer.parseInt(args[1]));
        } else {
            memory(libs, args[1], Integer.parseInt(args[2]));
        }
    }

    private static void memory(GpuLibraries libs, String kind, int n) throws InterruptedException {
        boolean comms = kind.equals("comms");
        long[] handles = new long[n];
        PointerByReference ref = new PointerByReference();
        // warm up: classes loaded, the agent's per-library and per-thread state made, JNA caches filled
        for (int i = 0; i < 1000; i++) {
            release(libs, comms, create(libs, comms, ref));
        }
        long before = usedAfterGc();
        for (int i = 0; i < n; i++) {
            handles[i] = Pointer.nativeValue(create(libs, comms, ref));
        }
        long after = usedAfterGc();
        System.out.println("handles=" + n + " kind=" + kind + " heap-before-bytes=" + before
                + " heap-after-bytes=" + after + " heap-delta-bytes=" + (after - before));
        for (long h : handles) {
            release(libs, comms, new Pointer(h));
        }
    }

    private static Pointer create(GpuLibraries libs, boolean comm, PointerByReference ref) {
        if (comm) {
            return GpuSession.initComm(libs, ref);
        }
        cuda(libs.cudart.cudaEventCreate(ref), "cudaEventCreate");
        return ref.getValue();
    }

    private static void release(GpuLibraries libs, boolean comm, Pointer handle) {
        if (comm) {
            libs.nccl(libs.nccl.ncclCommDestroy(handle), "ncclCommDestroy");
        } else {
            cuda(libs.cudart.cudaEventDestroy(handle), "cudaEventDestroy");
        }
    }

    /** Heap in use after full collections, once it stops shrinking. */
    static long usedAfterGc() throws InterruptedException {
        MemoryMXBean memory = ManagementFactory.getMemoryMXBean();
        long used = Long.MAX_VALUE;
        for (int i = 0; i < 10; i++) {
            System.gc();
            Thread.sleep(50);
            long now = memory.getHeapMemoryUsage().getUsed();
            if (now >= used) {
                return now;
            }
            used = now;
        }
        return used;
    }

    private static void exit(GpuLibraries libs, int n) {
        PointerByReference ref = new PointerByReference();
        cuda(libs.cudart.cudaStreamCreate(ref), "cudaStreamCreate");
        Pointer stream = ref.getValue();
        for (int i = 0; i < n; i++) {
            cuda(libs.cudart.cudaEventCreate(ref), "cudaEventCreate");
            cuda(libs.cudart.cudaEventRecord(ref.getValue(), stream), "cudaEventRecord");
        }
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            // the process's CPU so far (all threads): ProcessBench subtracts it from the total
            long cpu = ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
                    .getProcessCpuTime();
            System.out.println("hook-cpu-ns=" + cpu + " hook-end-ms=" + System.currentTimeMillis());
            System.out.flush();
        }, "last-application-hook"));
        System.out.println("events=" + n + " main-end-ms=" + System.currentTimeMillis());
    }
}
