package dev.ncclguard.samples;

import com.sun.jna.Memory;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.PointerByReference;
import dev.ncclguard.samples.jna.Cudart;
import dev.ncclguard.samples.jna.Nccl;
import dev.ncclguard.samples.jna.NcclUniqueId;
import java.util.List;

/**
 * One rank of the job: its GPU, its CUDA stream, its send and receive buffers and its NCCL
 * communicator. Each step is one method, so a stack trace names the step that made a handle.
 */
final class Rank {
    private static final long FLOAT_BYTES = Float.BYTES;
    /** Host copies go through a staging buffer of this many floats, so a large --count needs little host memory. */
    private static final int STAGING_FLOATS = 1 << 20;

    final int rank;
    final int nranks;
    final int device;
    final int count;
    private final Nccl nccl;
    private final Cudart cuda;
    private NcclUniqueId.ByValue uniqueId;
    private Pointer comm;
    private Pointer stream;
    private Pointer sendBuffer;
    private Pointer recvBuffer;
    private int allReduces;

    Rank(GpuLibraries libraries, int rank, int nranks, int count) {
        this.nccl = libraries.nccl;
        this.cuda = libraries.cudart;
        this.rank = rank;
        this.nranks = nranks;
        this.device = rank;
        this.count = count;
    }

    /** The id from ncclGetUniqueId that this rank joins with. */
    void joinWith(NcclUniqueId id) {
        uniqueId = id.copyByValue();
    }

    /** Creates every rank's communicator at once, from one thread, with ncclCommInitAll. */
    static void initAllCommunicators(Nccl nccl, List<Rank> ranks) {
        Pointer[] comms = new Pointer[ranks.size()];
        int[] devices = ranks.stream().mapToInt(r -> r.device).toArray();
        checkNccl(nccl, nccl.ncclCommInitAll(comms, comms.length, devices), "ncclCommInitAll");
        for (Rank r : ranks) {
            r.comm = comms[r.rank];
        }
    }

    /** Makes this rank's GPU current on the calling thread; CUDA's current device is per thread. */
    void useDevice() {
        cuda(cuda.cudaSetDevice(device), "cudaSetDevice");
    }

    /** A stream for this rank's work and its two buffers, the send buffer filled with this rank's input. */
    void allocate() {
        PointerByReference ref = new PointerByReference();
        cuda(cuda.cudaStreamCreate(ref), "cudaStreamCreate");
        stream = ref.getValue();
        long bytes = count * FLOAT_BYTES;
        cuda(cuda.cudaMalloc(ref, bytes), "cudaMalloc");
        sendBuffer = ref.getValue();
        cuda(cuda.cudaMalloc(ref, bytes), "cudaMalloc");
        recvBuffer = ref.getValue();
        copyInputToDevice();
    }

    private void copyInputToDevice() {
        float[] chunk = new float[Math.min(count, STAGING_FLOATS)];
        Memory staging = new Memory(chunk.length * FLOAT_BYTES);
        for (int start = 0; start < count; start += chunk.length) {
            int n = Math.min(chunk.length, count - start);
            for (int i = 0; i < n; i++) {
                chunk[i] = input(rank, start + i);
            }
            staging.write(0, chunk, 0, n);
            cuda(cuda.cudaMemcpy(sendBuffer.share(start * FLOAT_BYTES), staging, n * FLOAT_BYTES,
                    Cudart.cudaMemcpyHostToDevice), "cudaMemcpy");
        }
    }

    /** Joins the communicator with ncclCommInitRank; blocks until every rank has joined. */
    void initCommunicator() {
        if (comm != null) {
            return; // made by ncclCommInitAll
        }
        PointerByReference ref = new PointerByReference();
        nccl(nccl.ncclCommInitRank(ref, nranks, uniqueId, rank), "ncclCommInitRank");
        comm = ref.getValue();
    }

    /** Enqueues a sum allreduce of the send buffer into the receive buffer on this rank's stream. */
    void allReduce() {
        nccl(nccl.ncclAllReduce(sendBuffer, recvBuffer, count, Nccl.ncclFloat32, Nccl.ncclSum, comm, stream),
                "ncclAllReduce");
        allReduces++;
    }

    Pointer createEvent() {
        PointerByReference ref = new PointerByReference();
        cuda(cuda.cudaEventCreate(ref), "cudaEventCreate");
        return ref.getValue();
    }

    /** Marks the point in this rank's stream after the work enqueued so far. */
    void recordEvent(Pointer event) {
        cuda(cuda.cudaEventRecord(event, stream), "cudaEventRecord");
    }

    void synchronizeEvent(Pointer event) {
        cuda(cuda.cudaEventSynchronize(event), "cudaEventSynchronize");
    }

    /** Waits for the event by polling, the way an application overlaps host work with the GPU's. */
    void pollEvent(Pointer event) {
        int status;
        while ((status = cuda.cudaEventQuery(event)) == Cudart.cudaErrorNotReady) {
            Thread.onSpinWait();
        }
        cuda(status, "cudaEventQuery");
    }

    void synchronizeStream() {
        cuda(cuda.cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    }

    /** Copies the receive buffer back and compares it with the sum of every rank's input. */
    void checkResult() {
        float[] chunk = new float[Math.min(count, STAGING_FLOATS)];
        Memory staging = new Memory(chunk.length * FLOAT_BYTES);
        for (int start = 0; start < count; start += chunk.length) {
            int n = Math.min(chunk.length, count - start);
            cuda(cuda.cudaMemcpy(staging, recvBuffer.share(start * FLOAT_BYTES), n * FLOAT_BYTES,
                    Cudart.cudaMemcpyDeviceToHost), "cudaMemcpy");
            staging.read(0, chunk, 0, n);
            String mismatch = firstMismatch(chunk, n, start, nranks);
            if (mismatch != null) {
                throw new SampleFailure("wrong allreduce result: " + mismatch);
            }
        }
        System.out.println("rank " + rank + " (device " + device + "): " + allReduces + " allreduces of "
                + count + " floats, results correct");
    }

    void destroyEvent(Pointer event) {
        cuda(cuda.cudaEventDestroy(event), "cudaEventDestroy");
    }

    /** Splits this rank's communicator into one more of all the ranks (every rank must call it). */
    Pointer splitCommunicator() {
        PointerByReference ref = new PointerByReference();
        nccl(nccl.ncclCommSplit(comm, 0, rank, ref, null), "ncclCommSplit");
        return ref.getValue();
    }

    void destroyCommunicator(Pointer other) {
        nccl(nccl.ncclCommDestroy(other), "ncclCommDestroy");
    }

    void destroyCommunicator() {
        nccl(nccl.ncclCommDestroy(comm), "ncclCommDestroy");
        comm = null;
    }

    /** The error path NCCL asks for: abort, rather than destroy, a communicator that may be mid-operation. */
    void abortCommunicator() {
        if (comm != null) {
            nccl(nccl.ncclCommAbort(comm), "ncclCommAbort");
            comm = null;
        }
    }

    /** Releases the stream and the buffers. */
    void free() {
        cuda(cuda.cudaStreamDestroy(stream), "cudaStreamDestroy");
        cuda(cuda.cudaFree(sendBuffer), "cudaFree");
        cuda(cuda.cudaFree(recvBuffer), "cudaFree");
        stream = sendBuffer = recvBuffer = null;
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

    private void nccl(int status, String call) {
        checkNccl(nccl, status, call);
    }

    private void cuda(int status, String call) {
        checkCuda(cuda, status, call);
    }

    static void checkNccl(Nccl nccl, int status, String call) {
        if (status != Nccl.ncclSuccess) {
            throw new SampleFailure(call + " failed: " + nccl.ncclGetErrorString(status) + " (" + status + ")");
        }
    }

    static void checkCuda(Cudart cuda, int status, String call) {
        if (status != Cudart.cudaSuccess) {
            throw new SampleFailure(call + " failed: " + cuda.cudaGetErrorString(status) + " (" + status + ")");
        }
    }
}
