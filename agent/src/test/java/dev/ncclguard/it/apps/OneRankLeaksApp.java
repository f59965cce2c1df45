package dev.ncclguard.it.apps;

import com.sun.jna.Native;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.PointerByReference;
import dev.ncclguard.samples.jna.Cudart;
import dev.ncclguard.samples.jna.Nccl;
import dev.ncclguard.samples.jna.NcclUniqueId;

/**
 * A two-rank job in which one rank leaks: ranks 0 and 1 (threads, one device each) join one
 * communicator and allreduce once; rank 0 then destroys its communicator, rank 1 exits with its
 * own alive. On a real job with a process per rank, rank 1's exit is what rank 0's NCCL proxy
 * thread warns about. Args: the rank that leaks (default 1).
 */
public final class OneRankLeaksApp {
    private static final int NRANKS = 2;
    private static final long COUNT = 256;

    private OneRankLeaksApp() {
    }

    public static void main(String[] args) throws Exception {
        String emu = System.getProperty("ncclguard.emu");
        Nccl nccl = Native.load(emu + "/libnccl.so.2", Nccl.class);
        Cudart cuda = Native.load(emu + "/libcudart.so.13", Cudart.class);
        int leaker = args.length > 0 ? Integer.parseInt(args[0]) : 1;
        NcclUniqueId id = new NcclUniqueId();
        check(nccl.ncclGetUniqueId(id), "ncclGetUniqueId");
        Thread[] ranks = new Thread[NRANKS];
        Throwable[] failed = new Throwable[1];
        for (int r = 0; r < NRANKS; r++) {
            int rank = r;
            NcclUniqueId.ByValue mine = id.copyByValue();
            ranks[r] = new Thread(() -> {
                try {
                    rank(nccl, cuda, mine, rank, rank == leaker);
                } catch (Throwable t) {
                    failed[0] = t;
                }
            }, "rank-" + r);
            ranks[r].start();
        }
        for (Thread t : ranks) {
            t.join();
        }
        if (failed[0] != null) {
            throw new IllegalStateException(failed[0]);
        }
        System.out.println("rank " + leaker + " left its communicator alive");
    }

    private static void rank(Nccl nccl, Cudart cuda, NcclUniqueId.ByValue id, int rank, boolean leak) {
        check(cuda.cudaSetDevice(rank), "cudaSetDevice");
        PointerByReference ref = new PointerByReference();
        check(cuda.cudaStreamCreate(ref), "cudaStreamCreate");
        Pointer stream = ref.getValue();
        check(cuda.cudaMalloc(ref, COUNT * 4), "cudaMalloc");
        Pointer buffer = ref.getValue();
        check(nccl.ncclCommInitRank(ref, NRANKS, id, rank), "ncclCommInitRank");
        Pointer comm = ref.getValue();
        check(nccl.ncclAllReduce(buffer, buffer, COUNT, Nccl.ncclFloat32, Nccl.ncclSum, comm, stream), "ncclAllReduce");
        check(cuda.cudaStreamSynchronize(stream), "cudaStreamSynchronize");
        if (!leak) {
            check(nccl.ncclCommDestroy(comm), "ncclCommDestroy");
        }
        check(cuda.cudaStreamDestroy(stream), "cudaStreamDestroy");
        check(cuda.cudaFree(buffer), "cudaFree");
    }

    private static void check(int status, String call) {
        if (status != 0) {
            throw new IllegalStateException(call + " returned " + status);
        }
    }
}
