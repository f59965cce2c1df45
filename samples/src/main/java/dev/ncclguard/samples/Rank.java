package dev.ncclguard.samples;

import java.util.List;
import java.util.concurrent.atomic.AtomicReference;

/**
 * One rank of the job: its GPU, its CUDA stream, its send and receive buffers and its NCCL
 * communicator, reached through one bridge ({@link Gpu}). Each step is one method, so a stack
 * trace names the step that made a handle.
 */
final class Rank {
    private static final long FLOAT_BYTES = Float.BYTES;
    /** Host copies go through a staging buffer of this many floats, so a large --count needs little host memory. */
    private static final int STAGING_FLOATS = 1 << 20;

    final int rank;
    final int nranks;
    final int device;
    final int count;
    private final Gpu gpu;
    private byte[] uniqueId;
    private long comm;
    private long stream;
    private long sendBuffer;
    private long recvBuffer;
    private int allReduces;

    Rank(Gpu gpu, int rank, int nranks, int count) {
        this.gpu = gpu;
        this.rank = rank;
        this.nranks = nranks;
        this.device = rank;
        this.count = count;
    }

    /** The id from ncclGetUniqueId that this rank joins with. */
    void joinWith(byte[] id) {
        uniqueId = id.clone();
    }

    /** Creates every rank's communicator at once, from one thread, with ncclCommInitAll. */
    static void initAllCommunicators(Gpu gpu, List<Rank> ranks) {
        long[] comms = gpu.commInitAll(ranks.stream().mapToInt(r -> r.device).toArray());
        for (Rank r : ranks) {
            r.comm = comms[r.rank];
        }
    }

    /** Makes this rank's GPU current on the calling thread; CUDA's current device is per thread. */
    void useDevice() {
        gpu.setDevice(device);
    }

    /** A stream for this rank's work and its two buffers, the send buffer filled with this rank's input. */
    void allocate() {
        stream = gpu.streamCreate();
        long bytes = count * FLOAT_BYTES;
        sendBuffer = gpu.malloc(bytes);
        recvBuffer = gpu.malloc(bytes);
        copyInputToDevice();
    }

    private void copyInputToDevice() {
        float[] chunk = new float[Math.min(count, STAGING_FLOATS)];
        for (int start = 0; start < count; start += chunk.length) {
            int n = Math.min(chunk.length, count - start);
            for (int i = 0; i < n; i++) {
                chunk[i] = input(rank, start + i);
            }
            gpu.copyToDevice(sendBuffer + start * FLOAT_BYTES, chunk, n);
        }
    }

    /** Joins the communicator with ncclCommInitRank; blocks until every rank has joined. */
    void initCommunicator() {
        if (comm != 0) {
            return; // made by ncclCommInitAll
        }
        comm = gpu.commInitRank(nranks, uniqueId, rank);
    }

    /** Enqueues a sum allreduce of the send buffer into the receive buffer on this rank's stream. */
    void allReduce() {
        gpu.allReduce(sendBuffer, recvBuffer, count, comm, stream);
        allReduces++;
    }

    long createEvent() {
        return gpu.eventCreate();
    }

    /** Marks the point in this rank's stream after the work enqueued so far. */
    void recordEvent(long event) {
        gpu.eventRecord(event, stream);
    }

    void synchronizeEvent(long event) {
        gpu.eventSynchronize(event);
    }

    /** Waits for the event by polling, the way an application overlaps host work with the GPU's. */
    void pollEvent(long event) {
        while (!gpu.eventQuery(event)) {
            Thread.onSpinWait();
        }
    }

    void synchronizeStream() {
        gpu.streamSynchronize(stream);
    }

    /** Copies the receive buffer back and compares it with the sum of every rank's input. */
    void checkResult() {
        float[] chunk = new float[Math.min(count, STAGING_FLOATS)];
        for (int start = 0; start < count; start += chunk.length) {
            int n = Math.min(chunk.length, count - start);
            gpu.copyToHost(chunk, recvBuffer + start * FLOAT_BYTES, n);
            String mismatch = firstMismatch(chunk, n, start, nranks);
            if (mismatch != null) {
                throw new SampleFailure("wrong allreduce result: " + mismatch);
            }
        }
        System.out.println("rank " + rank + " (device " + device + "): " + allReduces + " allreduces of "
                + count + " floats, results correct");
    }

    void destroyEvent(long event) {
        gpu.eventDestroy(event);
    }

    /** A fresh ncclGetUniqueId for one more communicator of the ranks (serve makes one per rank group). */
    byte[] newUniqueId() {
        return gpu.uniqueId();
    }

    /** Joins one more communicator of all the ranks with {@code id}; every rank must call it. */
    long initCommunicator(byte[] id) {
        return gpu.commInitRank(nranks, id, rank);
    }

    void destroyCommunicator(long other) {
        gpu.commDestroy(other);
    }

    void destroyCommunicator() {
        gpu.commDestroy(comm);
        comm = 0;
    }

    /** The error path NCCL asks for: abort, rather than destroy, a communicator that may be mid-operation. */
    void abortCommunicator() {
        if (comm != 0) {
            gpu.commAbort(comm);
            comm = 0;
        }
    }

    // --- NCCL 2.28's other resources and 2.29's grow and revoke: one step each, as above ---

    /** Bytes of the NCCL memory a rank registers: one buffer, registered and windowed in halves. */
    static final long NCCL_MEMORY_BYTES = 1 << 20;
    private long ncclMemory;
    private long registration;
    private long window;
    private Object devComm;
    private long grown;

    /** ncclMemAlloc: NCCL's own memory, for registration and windows. */
    void allocateNcclMemory() {
        ncclMemory = gpu.memAlloc(NCCL_MEMORY_BYTES);
    }

    /** ncclCommRegister of the memory's first half with this rank's communicator. */
    void registerBuffer() {
        registration = gpu.commRegister(comm, ncclMemory, NCCL_MEMORY_BYTES / 2);
    }

    /** ncclCommWindowRegister of the memory's second half, a symmetric window (collective: every rank). */
    void registerWindow() {
        window = gpu.windowRegister(comm, ncclMemory + NCCL_MEMORY_BYTES / 2, NCCL_MEMORY_BYTES / 2,
                Gpu.NCCL_WIN_COLL_SYMMETRIC);
    }

    /**
     * ncclDevCommCreate with the default requirements (collective: every rank), where the bridge
     * reaches it. A communicator without symmetric memory (one rank on one GPU of real NCCL 2.28:
     * "Communicator does not support symmetric memory!") answers ncclInvalidUsage: said in one line,
     * and the step is left out, so the other resources are still held.
     */
    void createDeviceCommunicator() {
        if (gpu.reachesDeviceCommunicators()) {
            try {
                devComm = gpu.devCommCreate(comm);
            } catch (SampleFailure e) {
                if (e.getMessage() == null || !e.getMessage().endsWith("(5)")) { // ncclInvalidUsage
                    throw e;
                }
                System.out.println("rank " + rank + ": no device communicator: " + e.getMessage()
                        + "; this communicator has no symmetric memory");
            }
        }
    }

    void destroyDeviceCommunicator() {
        if (devComm != null) {
            gpu.devCommDestroy(comm, devComm);
            devComm = null;
        }
    }

    void deregisterWindow() {
        gpu.windowDeregister(comm, window);
        window = 0;
    }

    void deregisterBuffer() {
        gpu.commDeregister(comm, registration);
        registration = 0;
    }

    void freeNcclMemory() {
        gpu.memFree(ncclMemory);
        ncclMemory = 0;
    }

    /** ncclCommGetUniqueId: the id of a grow of this rank's communicator (one rank makes it). */
    byte[] growId() {
        return gpu.commGetUniqueId(comm);
    }

    /** ncclCommGrow on an existing rank: rank -1, the id on the rank that made it, null on the others. */
    void growCommunicator(int newRanks, byte[] idOrNull) {
        grown = gpu.commGrow(comm, newRanks, idOrNull, -1);
    }

    /**
     * The grow's new rank (rank {@code nranks}), on a thread of its own, on the next device (round):
     * ncclCommGrow with no parent, the grow's id and its rank; then revoke, and if {@code release}
     * destroy. Its failure, if any, is in {@code failure} once the thread is done.
     */
    Thread startNewRank(int newRanks, byte[] id, boolean release, AtomicReference<RuntimeException> failure) {
        Thread t = new Thread(() -> {
            try {
                gpu.setDevice(nranks % gpu.deviceCount());
                long joined = gpu.commGrow(0, newRanks, id, nranks);
                gpu.commRevoke(joined);
                if (release) {
                    gpu.commDestroy(joined);
                }
                System.out.println("rank " + nranks + " (new): joined the grow to " + newRanks + " ranks");
            } catch (RuntimeException e) {
                failure.set(e);
            }
        }, "rank-" + nranks + "-new");
        t.start();
        return t;
    }

    /** ncclCommRevoke of the grown communicator: a step, it still needs destroy or abort. */
    void revokeGrown() {
        gpu.commRevoke(grown);
    }

    void destroyGrown() {
        gpu.commDestroy(grown);
        grown = 0;
    }

    /** Releases the stream and the buffers. */
    void free() {
        gpu.streamDestroy(stream);
        gpu.free(sendBuffer);
        gpu.free(recvBuffer);
        stream = sendBuffer = recvBuffer = 0;
    }

    /** Rank r's input at element i: small whole numbers, so float sums are exact. */
    static float input(int rank, long i) {
        return (rank + 1) * (1 + i % 100);
    }

    /** Describes the first element of {@code actual[0..n)} (elements start.. of the buffer) that differs from the sum, or null. */
    static String firstMismatch(float[] actual, int n, long start, int nranks) {
        for (int i = 0; i < n; i++) {
            float expected = 0;
            for (int r = 0; r < nranks; r++) {
                expected += input(r, start + i);
            }
            if (actual[i] != expected) {
                return "element " + (start + i) + " is " + actual[i] + ", expected " + expected
                        + " (the sum of " + nranks + " ranks' inputs)";
            }
        }
        return null;
    }
}
