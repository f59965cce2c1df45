package dev.ncclguard.bench.gpu;

import static dev.ncclguard.bench.GpuLibraries.cuda;

import com.sun.jna.Pointer;
import com.sun.jna.ptr.IntByReference;
import com.sun.jna.ptr.PointerByReference;
import dev.ncclguard.bench.GpuLibraries;
import dev.ncclguard.bench.jna.Nccl;
import dev.ncclguard.bench.jna.NcclUniqueId;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.BrokenBarrierException;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A loop of allreduces over N GPUs of this machine, one thread and one communicator per GPU,
 * through JNA interface mapping; run with and without the agent by scripts/gpu/30-bench.sh.
 * {@code java -cp ncclguard-bench.jar dev.ncclguard.bench.gpu.AllReduceLoop --bytes B --iters N
 * [--warmup N] [--ranks 2]}. Prints one line: {@code allreduce bytes=... us-per-op=... GB/s=...},
 * timed from a barrier after the warmup to every rank's stream synchronized after the last one.
 */
public final class AllReduceLoop {
    private AllReduceLoop() {
    }

    public static void main(String[] args) throws Exception {
        long bytes = 1024;
        int iters = 10_000;
        int warmup = 1_000;
        int ranks = 2;
        for (int i = 0; i + 1 < args.length; i += 2) {
            switch (args[i]) {
                case "--bytes" -> bytes = Long.parseLong(args[i + 1]);
                case "--iters" -> iters = Integer.parseInt(args[i + 1]);
                case "--warmup" -> warmup = Integer.parseInt(args[i + 1]);
                case "--ranks" -> ranks = Integer.parseInt(args[i + 1]);
                default -> throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        GpuLibraries libs = GpuLibraries.load();
        IntByReference count = new IntByReference();
        cuda(libs.cudart.cudaGetDeviceCount(count), "cudaGetDeviceCount");
        if (count.getValue() < ranks) {
            throw new IllegalStateException(ranks + " ranks need " + ranks + " GPUs, found " + count.getValue());
        }
        NcclUniqueId id = new NcclUniqueId();
        libs.nccl(libs.nccl.ncclGetUniqueId(id), "ncclGetUniqueId");

        long floats = bytes / Float.BYTES;
        int n = ranks;
        int loops = iters;
        int warm = warmup;
        CyclicBarrier barrier = new CyclicBarrier(n);
        long[] start = new long[1];
        long[] end = new long[1];
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Thread> threads = new ArrayList<>();
        for (int r = 0; r < n; r++) {
            int rank = r;
            NcclUniqueId.ByValue mine = id.copyByValue();
            Thread t = new Thread(() -> {
                try {
                    rank(libs, rank, n, mine, floats, warm, loops, barrier, start, end);
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                    barrier.reset();
                }
            }, "rank-" + r);
            threads.add(t);
            t.start();
        }
        for (Thread t : threads) {
            t.join();
        }
        if (failure.get() != null) {
            failure.get().printStackTrace();
            System.exit(1);
        }
        double seconds = (end[0] - start[0]) / 1e9;
        System.out.printf(Locale.ROOT, "allreduce bytes=%d ranks=%d iters=%d seconds=%.4f us-per-op=%.3f GB/s=%.6f libraries=%s%n",
                bytes, n, loops, seconds, seconds * 1e6 / loops, bytes * (double) loops / seconds / 1e9, libs.origin);
    }

    private static void rank(GpuLibraries libs, int rank, int nranks, NcclUniqueId.ByValue id, long floats,
            int warmup, int iters, CyclicBarrier barrier, long[] start, long[] end)
            throws InterruptedException, BrokenBarrierException {
        cuda(libs.cudart.cudaSetDevice(rank), "cudaSetDevice");
        PointerByReference ref = new PointerByReference();
        cuda(libs.cudart.cudaStreamCreate(ref), "cudaStreamCreate");
        Pointer stream = ref.getValue();
        cuda(libs.cudart.cudaMalloc(ref, floats * Float.BYTES), "cudaMalloc");
        Pointer send = ref.getValue();
        cuda(libs.cudart.cudaMalloc(ref, floats * Float.BYTES), "cudaMalloc");
        Pointer recv = ref.getValue();
        libs.nccl(libs.nccl.ncclCommInitRank(ref, nranks, id, rank), "ncclCommInitRank");
        Pointer comm = ref.getValue();
        Nccl nccl = libs.nccl;
        for (int i = 0; i < warmup; i++) {
            libs.nccl(nccl.ncclAllReduce(send, recv, floats, Nccl.ncclFloat32, Nccl.ncclSum, comm, stream), "ncclAllReduce");
        }
        cuda(libs.cudart.cudaStreamSynchronize(stream), "cudaStreamSynchronize");
        barrier.await();
        if (rank == 0) {
            start[0] = System.nanoTime();
        }
        for (int i = 0; i < iters; i++) {
            int status = nccl.ncclAllReduce(send, recv, floats, Nccl.ncclFloat32, Nccl.ncclSum, comm, stream);
            if (status != 0) {
                libs.nccl(status, "ncclAllReduce");
            }
        }
        cuda(libs.cudart.cudaStreamSynchronize(stream), "cudaStreamSynchronize");
        barrier.await();
        if (rank == 0) {
            end[0] = System.nanoTime();
        }
        libs.nccl(nccl.ncclCommDestroy(comm), "ncclCommDestroy");
        cuda(libs.cudart.cudaFree(send), "cudaFree");
        cuda(libs.cudart.cudaFree(recv), "cudaFree");
        cuda(libs.cudart.cudaStreamDestroy(stream), "cudaStreamDestroy");
    }
}
