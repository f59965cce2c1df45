package dev.ncclguard.samples.ffm;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.ncclguard.samples.Gpu;
import dev.ncclguard.samples.SampleFailure;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.file.Path;

/**
 * The calls through the Foreign Function and Memory API (java.lang.foreign, Java 22+): a downcall
 * handle per function, made once from SymbolLookup.libraryLookup over the files the samples chose.
 */
public final class FfmGpu implements Gpu {
    private static final MemoryLayout UNIQUE_ID = MemoryLayout.structLayout(
            MemoryLayout.sequenceLayout(UNIQUE_ID_BYTES, JAVA_BYTE).withName("internal"));

    private final MethodHandle ncclGetVersion;
    private final MethodHandle ncclGetErrorString;
    private final MethodHandle ncclGetUniqueId;
    private final MethodHandle ncclCommInitRank;
    private final MethodHandle ncclCommInitAll;
    private final MethodHandle ncclCommDestroy;
    private final MethodHandle ncclCommAbort;
    private final MethodHandle ncclAllReduce;
    private final MethodHandle cudaGetErrorString;
    private final MethodHandle cudaGetDeviceCount;
    private final MethodHandle cudaSetDevice;
    private final MethodHandle cudaMalloc;
    private final MethodHandle cudaFree;
    private final MethodHandle cudaMemcpy;
    private final MethodHandle cudaStreamCreate;
    private final MethodHandle cudaStreamSynchronize;
    private final MethodHandle cudaStreamQuery;
    private final MethodHandle cudaStreamDestroy;
    private final MethodHandle cudaEventCreate;
    private final MethodHandle cudaEventRecord;
    private final MethodHandle cudaEventSynchronize;
    private final MethodHandle cudaEventQuery;
    private final MethodHandle cudaEventDestroy;
    // NCCL 2.28/2.29's other resources: null where the library lacks the symbol
    private final MethodHandle ncclMemAlloc;
    private final MethodHandle ncclMemFree;
    private final MethodHandle ncclCommRegister;
    private final MethodHandle ncclCommDeregister;
    private final MethodHandle ncclCommWindowRegister;
    private final MethodHandle ncclCommWindowDeregister;
    private final MethodHandle ncclDevCommCreate;
    private final MethodHandle ncclDevCommDestroy;
    private final MethodHandle ncclCommGetUniqueId;
    private final MethodHandle ncclCommGrow;
    private final MethodHandle ncclCommRevoke;

    private FfmGpu(SymbolLookup nccl, SymbolLookup cuda) {
        ncclGetVersion = handle(nccl, "ncclGetVersion", JAVA_INT, ADDRESS);
        ncclGetErrorString = handle(nccl, "ncclGetErrorString", ADDRESS, JAVA_INT);
        ncclGetUniqueId = handle(nccl, "ncclGetUniqueId", JAVA_INT, ADDRESS);
        ncclCommInitRank = handle(nccl, "ncclCommInitRank", JAVA_INT, ADDRESS, JAVA_INT, UNIQUE_ID, JAVA_INT);
        ncclCommInitAll = handle(nccl, "ncclCommInitAll", JAVA_INT, ADDRESS, JAVA_INT, ADDRESS);
        ncclCommDestroy = handle(nccl, "ncclCommDestroy", JAVA_INT, ADDRESS);
        ncclCommAbort = handle(nccl, "ncclCommAbort", JAVA_INT, ADDRESS);
        ncclAllReduce = handle(nccl, "ncclAllReduce", JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG, JAVA_INT, JAVA_INT,
                ADDRESS, ADDRESS);
        cudaGetErrorString = handle(cuda, "cudaGetErrorString", ADDRESS, JAVA_INT);
        cudaGetDeviceCount = handle(cuda, "cudaGetDeviceCount", JAVA_INT, ADDRESS);
        cudaSetDevice = handle(cuda, "cudaSetDevice", JAVA_INT, JAVA_INT);
        cudaMalloc = handle(cuda, "cudaMalloc", JAVA_INT, ADDRESS, JAVA_LONG);
        cudaFree = handle(cuda, "cudaFree", JAVA_INT, ADDRESS);
        cudaMemcpy = handle(cuda, "cudaMemcpy", JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG, JAVA_INT);
        cudaStreamCreate = handle(cuda, "cudaStreamCreate", JAVA_INT, ADDRESS);
        cudaStreamSynchronize = handle(cuda, "cudaStreamSynchronize", JAVA_INT, ADDRESS);
        cudaStreamQuery = handle(cuda, "cudaStreamQuery", JAVA_INT, ADDRESS);
        cudaStreamDestroy = handle(cuda, "cudaStreamDestroy", JAVA_INT, ADDRESS);
        cudaEventCreate = handle(cuda, "cudaEventCreate", JAVA_INT, ADDRESS);
        cudaEventRecord = handle(cuda, "cudaEventRecord", JAVA_INT, ADDRESS, ADDRESS);
        cudaEventSynchronize = handle(cuda, "cudaEventSynchronize", JAVA_INT, ADDRESS);
        cudaEventQuery = handle(cuda, "cudaEventQuery", JAVA_INT, ADDRESS);
        cudaEventDestroy = handle(cuda, "cudaEventDestroy", JAVA_INT, ADDRESS);
        ncclMemAlloc = optional(nccl, "ncclMemAlloc", JAVA_INT, ADDRESS, JAVA_LONG);
        ncclMemFree = optional(nccl, "ncclMemFree", JAVA_INT, ADDRESS);
        ncclCommRegister = optional(nccl, "ncclCommRegister", JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG, ADDRESS);
        ncclCommDeregister = optional(nccl, "ncclCommDeregister", JAVA_INT, ADDRESS, ADDRESS);
        ncclCommWindowRegister = optional(nccl, "ncclCommWindowRegister", JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG,
                ADDRESS, JAVA_INT);
        ncclCommWindowDeregister = optional(nccl, "ncclCommWindowDeregister", JAVA_INT, ADDRESS, ADDRESS);
        ncclDevCommCreate = optional(nccl, "ncclDevCommCreate", JAVA_INT, ADDRESS, ADDRESS, ADDRESS);
        ncclDevCommDestroy = optional(nccl, "ncclDevCommDestroy", JAVA_INT, ADDRESS, ADDRESS);
        ncclCommGetUniqueId = optional(nccl, "ncclCommGetUniqueId", JAVA_INT, ADDRESS, ADDRESS);
        ncclCommGrow = optional(nccl, "ncclCommGrow", JAVA_INT, ADDRESS, JAVA_INT, ADDRESS, JAVA_INT, ADDRESS,
                ADDRESS);
        ncclCommRevoke = optional(nccl, "ncclCommRevoke", JAVA_INT, ADDRESS, JAVA_INT);
    }

    /** A handle made now where the library has the symbol (so the agent sees it, for cleanup too), else null. */
    private static MethodHandle optional(SymbolLookup lookup, String name, MemoryLayout result, MemoryLayout... args) {
        return lookup.find(name).isPresent() ? handle(lookup, name, result, args) : null;
    }

    private static MethodHandle present(MethodHandle h, String name) {
        if (h == null) {
            throw new SampleFailure(name + " is not in this NCCL library");
        }
        return h;
    }

    /** Binds to the given files (already loaded by the caller; the loader hands back the same ones). */
    public static FfmGpu open(Path nccl, Path cudart) {
        Arena global = Arena.global();
        return new FfmGpu(SymbolLookup.libraryLookup(nccl, global), SymbolLookup.libraryLookup(cudart, global));
    }

    private static MethodHandle handle(SymbolLookup lookup, String name, MemoryLayout result, MemoryLayout... args) {
        MemorySegment symbol = lookup.find(name).orElseThrow(() -> new SampleFailure("no symbol " + name));
        return Linker.nativeLinker().downcallHandle(symbol, FunctionDescriptor.of(result, args));
    }

    private static MemorySegment p(long address) {
        return MemorySegment.ofAddress(address);
    }

    @Override
    public String bridge() {
        return "ffm";
    }

    @Override
    public int ncclVersionCode() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment code = arena.allocate(JAVA_INT);
            nccl(call(ncclGetVersion, code), "ncclGetVersion");
            return code.get(JAVA_INT, 0);
        }
    }

    @Override
    public int deviceCount() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment count = arena.allocate(JAVA_INT);
            cuda(call(cudaGetDeviceCount, count), "cudaGetDeviceCount");
            return count.get(JAVA_INT, 0);
        }
    }

    @Override
    public void setDevice(int device) {
        cuda(call(cudaSetDevice, device), "cudaSetDevice");
    }

    /** A call that writes one pointer through its first argument; returns the pointer. */
    private long out(MethodHandle h, String name, boolean nccl, Object... rest) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            Object[] args = new Object[rest.length + 1];
            args[0] = out;
            System.arraycopy(rest, 0, args, 1, rest.length);
            int status = call(h, args);
            if (nccl) {
                nccl(status, name);
            } else {
                cuda(status, name);
            }
            return out.get(JAVA_LONG, 0);
        }
    }

    @Override
    public long streamCreate() {
        return out(cudaStreamCreate, "cudaStreamCreate", false);
    }

    @Override
    public void streamSynchronize(long stream) {
        cuda(call(cudaStreamSynchronize, p(stream)), "cudaStreamSynchronize");
    }

    /** Not called by the samples: made for the agent's exit-time queries, like every handle here. */
    int streamQuery(long stream) {
        return call(cudaStreamQuery, p(stream));
    }

    @Override
    public void streamDestroy(long stream) {
        cuda(call(cudaStreamDestroy, p(stream)), "cudaStreamDestroy");
    }

    @Override
    public long malloc(long bytes) {
        return out(cudaMalloc, "cudaMalloc", false, bytes);
    }

    @Override
    public void free(long pointer) {
        cuda(call(cudaFree, p(pointer)), "cudaFree");
    }

    @Override
    public void copyToDevice(long dst, float[] src, int n) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment host = arena.allocate((long) n * Float.BYTES);
            MemorySegment.copy(src, 0, host, java.lang.foreign.ValueLayout.JAVA_FLOAT, 0, n);
            cuda(call(cudaMemcpy, p(dst), host, host.byteSize(), CUDA_MEMCPY_HOST_TO_DEVICE), "cudaMemcpy");
        }
    }

    @Override
    public void copyToHost(float[] dst, long src, int n) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment host = arena.allocate((long) n * Float.BYTES);
            cuda(call(cudaMemcpy, host, p(src), host.byteSize(), CUDA_MEMCPY_DEVICE_TO_HOST), "cudaMemcpy");
            MemorySegment.copy(host, java.lang.foreign.ValueLayout.JAVA_FLOAT, 0, dst, 0, n);
        }
    }

    @Override
    public long eventCreate() {
        return out(cudaEventCreate, "cudaEventCreate", false);
    }

    @Override
    public void eventRecord(long event, long stream) {
        cuda(call(cudaEventRecord, p(event), p(stream)), "cudaEventRecord");
    }

    @Override
    public void eventSynchronize(long event) {
        cuda(call(cudaEventSynchronize, p(event)), "cudaEventSynchronize");
    }

    @Override
    public boolean eventQuery(long event) {
        return SampleFailure.done(call(cudaEventQuery, p(event)), "cudaEventQuery", s -> errorString(cudaGetErrorString, s));
    }

    @Override
    public void eventDestroy(long event) {
        cuda(call(cudaEventDestroy, p(event)), "cudaEventDestroy");
    }

    @Override
    public byte[] uniqueId() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment id = arena.allocate(UNIQUE_ID);
            nccl(call(ncclGetUniqueId, id), "ncclGetUniqueId");
            return id.toArray(JAVA_BYTE);
        }
    }

    @Override
    public long commInitRank(int nranks, byte[] uniqueId, int rank) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment id = arena.allocate(UNIQUE_ID);
            MemorySegment.copy(uniqueId, 0, id, JAVA_BYTE, 0, UNIQUE_ID_BYTES);
            MemorySegment comm = arena.allocate(ADDRESS);
            nccl(call(ncclCommInitRank, comm, nranks, id, rank), "ncclCommInitRank");
            return comm.get(JAVA_LONG, 0);
        }
    }

    @Override
    public long[] commInitAll(int[] devices) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment comms = arena.allocate(JAVA_LONG, devices.length);
            MemorySegment devlist = arena.allocateFrom(JAVA_INT, devices);
            nccl(call(ncclCommInitAll, comms, devices.length, devlist), "ncclCommInitAll");
            return comms.toArray(JAVA_LONG);
        }
    }

    @Override
    public void allReduce(long send, long recv, long count, long comm, long stream) {
        nccl(call(ncclAllReduce, p(send), p(recv), count, NCCL_FLOAT32, NCCL_SUM, p(comm), p(stream)),
                "ncclAllReduce");
    }

    @Override
    public void commDestroy(long comm) {
        nccl(call(ncclCommDestroy, p(comm)), "ncclCommDestroy");
    }

    @Override
    public void commAbort(long comm) {
        nccl(call(ncclCommAbort, p(comm)), "ncclCommAbort");
    }

    @Override
    public long memAlloc(long bytes) {
        return out(present(ncclMemAlloc, "ncclMemAlloc"), "ncclMemAlloc", true, bytes);
    }

    @Override
    public void memFree(long pointer) {
        nccl(call(present(ncclMemFree, "ncclMemFree"), p(pointer)), "ncclMemFree");
    }

    @Override
    public long commRegister(long comm, long buffer, long bytes) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment handle = arena.allocate(ADDRESS);
            nccl(call(present(ncclCommRegister, "ncclCommRegister"), p(comm), p(buffer), bytes, handle),
                    "ncclCommRegister");
            return handle.get(JAVA_LONG, 0);
        }
    }

    @Override
    public void commDeregister(long comm, long handle) {
        nccl(call(present(ncclCommDeregister, "ncclCommDeregister"), p(comm), p(handle)), "ncclCommDeregister");
    }

    @Override
    public long windowRegister(long comm, long buffer, long bytes, int flags) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment win = arena.allocate(ADDRESS);
            nccl(call(present(ncclCommWindowRegister, "ncclCommWindowRegister"), p(comm), p(buffer), bytes, win, flags),
                    "ncclCommWindowRegister");
            return win.get(JAVA_LONG, 0);
        }
    }

    @Override
    public void windowDeregister(long comm, long window) {
        nccl(call(present(ncclCommWindowDeregister, "ncclCommWindowDeregister"), p(comm), p(window)),
                "ncclCommWindowDeregister");
    }

    /** The struct lives in an automatic arena: as long as the sample holds the segment. */
    @Override
    public Object devCommCreate(long comm) {
        byte[] reqs = dev.ncclguard.samples.DevCommRequirements.bytes(ncclVersionCode());
        Arena arena = Arena.ofAuto();
        MemorySegment requirements = arena.allocate(reqs.length, 8);
        MemorySegment.copy(reqs, 0, requirements, JAVA_BYTE, 0, reqs.length);
        MemorySegment devComm = arena.allocate(DEV_COMM_BYTES, 8);
        nccl(call(present(ncclDevCommCreate, "ncclDevCommCreate"), p(comm), requirements, devComm), "ncclDevCommCreate");
        return devComm;
    }

    @Override
    public void devCommDestroy(long comm, Object devComm) {
        nccl(call(present(ncclDevCommDestroy, "ncclDevCommDestroy"), p(comm), (MemorySegment) devComm),
                "ncclDevCommDestroy");
    }

    @Override
    public byte[] commGetUniqueId(long comm) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment id = arena.allocate(UNIQUE_ID);
            nccl(call(present(ncclCommGetUniqueId, "ncclCommGetUniqueId"), p(comm), id), "ncclCommGetUniqueId");
            return id.toArray(JAVA_BYTE);
        }
    }

    @Override
    public long commGrow(long comm, int nranks, byte[] uniqueId, int rank) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment id = MemorySegment.NULL;
            if (uniqueId != null) {
                id = arena.allocate(UNIQUE_ID);
                MemorySegment.copy(uniqueId, 0, id, JAVA_BYTE, 0, UNIQUE_ID_BYTES);
            }
            MemorySegment grown = arena.allocate(ADDRESS);
            nccl(call(present(ncclCommGrow, "ncclCommGrow"), p(comm), nranks, id, rank, grown, MemorySegment.NULL),
                    "ncclCommGrow");
            return grown.get(JAVA_LONG, 0);
        }
    }

    @Override
    public void commRevoke(long comm) {
        nccl(call(present(ncclCommRevoke, "ncclCommRevoke"), p(comm), 0), "ncclCommRevoke");
    }

    private static int call(MethodHandle h, Object... args) {
        try {
            return (int) h.invokeWithArguments(args);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new SampleFailure("downcall failed: " + t);
        }
    }

    private String errorString(MethodHandle h, int status) {
        try {
            MemorySegment s = (MemorySegment) h.invokeWithArguments(status);
            return s.reinterpret(Long.MAX_VALUE).getString(0);
        } catch (Throwable t) {
            return "error " + status;
        }
    }

    private void nccl(int status, String name) {
        SampleFailure.check(status, name, s -> errorString(ncclGetErrorString, s));
    }

    private void cuda(int status, String name) {
        SampleFailure.check(status, name, s -> errorString(cudaGetErrorString, s));
    }
}
