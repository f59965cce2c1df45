package dev.ncclguard.catalog;

import static dev.ncclguard.catalog.Effect.*;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * What each NCCL, CUDA runtime and CUDA driver function the agent follows does, as data: adding a
 * function is one line below. Signatures are those of NCCL 2.28.3 and 2.29.3 (NVIDIA/nccl src/nccl.h.in, and
 * src/include/nccl_device/core.h for device communicators, whose first two parameters it leaves
 * unnamed: named here as the emulator names them), the CUDA 13 runtime (cuda_runtime_api.h) and
 * driver (cuda.h: its CUresult codes are the runtime's for these functions);
 * positions are 0-based C argument indexes. Each line also carries the C
 * parameter list, from which the agent's native library is generated ({@link CHeader}). The
 * {@code ...Config} variants of the collectives are not in any NCCL header up to 2.30: their
 * parameter list (the collective's, then a config pointer) is a guess.
 */
public final class Catalog {
    /** sizeof(ncclUniqueId), NCCL_UNIQUE_ID_BYTES in nccl.h. */
    public static final int UNIQUE_ID_BYTES = 128;

    private static final List<Def> DEFS = new ArrayList<>();

    static {
        // communicators: creation
        def("ncclCommInitRank", COMM_CREATE,
                "ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank").handle(0).nranks(1).uniqueId(2).rank(3);
        def("ncclCommInitRankConfig", COMM_CREATE,
                "ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t* config").handle(0).nranks(1).uniqueId(2).rank(3);
        def("ncclCommInitRankScalable", COMM_CREATE,
                "ncclComm_t* newcomm, int nranks, int myrank, int nId, ncclUniqueId* commIds, ncclConfig_t* config").handle(0).nranks(1).rank(2).count(3).uniqueId(4);
        def("ncclCommInitAll", COMM_CREATE_ALL,
                "ncclComm_t* comms, int ndev, const int* devlist").handle(0).nranks(1).device(2);
        def("ncclCommSplit", COMM_SPLIT,
                "ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config").parentComm(0).color(1).key(2).handle(3);
        def("ncclCommShrink", COMM_SHRINK,
                "ncclComm_t comm, int* excludeRanksList, int excludeRanksCount, ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags").parentComm(0).rankList(1).count(2).handle(3);
        // communicators: end
        def("ncclCommFinalize", COMM_FINALIZE,
                "ncclComm_t comm").handle(0);
        def("ncclCommDestroy", COMM_DESTROY,
                "ncclComm_t comm").handle(0);
        def("ncclCommAbort", COMM_ABORT,
                "ncclComm_t comm").handle(0);
        // work on a stream through a communicator: (..., comm, stream)
        def("ncclAllReduce", COMM_ENQUEUE,
                "const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream").handle(5).stream(6);
        def("ncclBroadcast", COMM_ENQUEUE,
                "const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream").handle(5).stream(6);
        def("ncclBcast", COMM_ENQUEUE,
                "void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream").handle(4).stream(5);
        def("ncclReduce", COMM_ENQUEUE,
                "const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream").handle(6).stream(7);
        def("ncclAllGather", COMM_ENQUEUE,
                "const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream").handle(4).stream(5);
        def("ncclReduceScatter", COMM_ENQUEUE,
                "const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream").handle(5).stream(6);
        def("ncclAlltoAll", COMM_ENQUEUE,
                "const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream").handle(4).stream(5);
        def("ncclGather", COMM_ENQUEUE,
                "const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream").handle(5).stream(6);
        def("ncclScatter", COMM_ENQUEUE,
                "const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream").handle(5).stream(6);
        def("ncclSend", COMM_ENQUEUE,
                "const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm, cudaStream_t stream").handle(4).stream(5);
        def("ncclRecv", COMM_ENQUEUE,
                "void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm, cudaStream_t stream").handle(4).stream(5);
        // the per-call config variants of newer nccl.h: the same positions, a config last
        def("ncclAllReduceConfig", COMM_ENQUEUE,
                "const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream, const void* config").handle(5).stream(6);
        def("ncclBroadcastConfig", COMM_ENQUEUE,
                "const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream, const void* config").handle(5).stream(6);
        def("ncclReduceConfig", COMM_ENQUEUE,
                "const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream, const void* config").handle(6).stream(7);
        def("ncclAllGatherConfig", COMM_ENQUEUE,
                "const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream, const void* config").handle(4).stream(5);
        def("ncclReduceScatterConfig", COMM_ENQUEUE,
                "const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream, const void* config").handle(5).stream(6);
        def("ncclAlltoAllConfig", COMM_ENQUEUE,
                "const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream, const void* config").handle(4).stream(5);
        def("ncclGatherConfig", COMM_ENQUEUE,
                "const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream, const void* config").handle(5).stream(6);
        def("ncclScatterConfig", COMM_ENQUEUE,
                "const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream, const void* config").handle(5).stream(6);
        def("ncclGroupStart", GROUP_START,
                "void");
        def("ncclGroupEnd", GROUP_END,
                "void");
        // CUDA events
        def("cudaEventCreate", EVENT_CREATE,
                "cudaEvent_t* event").handle(0);
        def("cudaEventCreateWithFlags", EVENT_CREATE,
                "cudaEvent_t* event, unsigned int flags").handle(0);
        def("cudaEventRecord", EVENT_RECORD,
                "cudaEvent_t event, cudaStream_t stream").handle(0).stream(1);
        def("cudaEventRecordWithFlags", EVENT_RECORD,
                "cudaEvent_t event, cudaStream_t stream, unsigned int flags").handle(0).stream(1);
        def("cudaEventQuery", EVENT_QUERY,
                "cudaEvent_t event").handle(0);
        def("cudaEventSynchronize", EVENT_SYNC,
                "cudaEvent_t event").handle(0);
        def("cudaEventDestroy", EVENT_DESTROY,
                "cudaEvent_t event").handle(0);
        // CUDA streams
        def("cudaStreamCreate", STREAM_CREATE,
                "cudaStream_t* pStream").handle(0);
        def("cudaStreamCreateWithFlags", STREAM_CREATE,
                "cudaStream_t* pStream, unsigned int flags").handle(0);
        def("cudaStreamCreateWithPriority", STREAM_CREATE,
                "cudaStream_t* pStream, unsigned int flags, int priority").handle(0);
        def("cudaStreamSynchronize", STREAM_SYNC,
                "cudaStream_t stream").handle(0).stream(0);
        def("cudaStreamQuery", STREAM_QUERY,
                "cudaStream_t stream").handle(0).stream(0);
        def("cudaStreamWaitEvent", STREAM_WAIT_EVENT,
                "cudaStream_t stream, cudaEvent_t event, unsigned int flags").handle(0).stream(0).event(1);
        def("cudaStreamDestroy", STREAM_DESTROY,
                "cudaStream_t stream").handle(0).stream(0);
        // CUDA devices
        def("cudaDeviceSynchronize", DEVICE_SYNC,
                "void");
        def("cudaSetDevice", SET_DEVICE,
                "int device").device(0);
        // the CUDA driver's events and streams (cuda.h; libcuda.so.1), under their exported names:
        // what a static cudart and CuPy call (a static cudart through cuGetProcAddress). CUevent and
        // CUstream are the runtime's handles; _ptsz: the per-thread default stream's variants
        def("cuEventCreate", EVENT_CREATE,
                "CUevent* phEvent, unsigned int Flags").handle(0);
        def("cuEventRecord", EVENT_RECORD,
                "CUevent hEvent, CUstream hStream").handle(0).stream(1);
        def("cuEventRecord_ptsz", EVENT_RECORD,
                "CUevent hEvent, CUstream hStream").handle(0).stream(1);
        def("cuEventRecordWithFlags", EVENT_RECORD,
                "CUevent hEvent, CUstream hStream, unsigned int flags").handle(0).stream(1);
        def("cuEventRecordWithFlags_ptsz", EVENT_RECORD,
                "CUevent hEvent, CUstream hStream, unsigned int flags").handle(0).stream(1);
        def("cuEventQuery", EVENT_QUERY,
                "CUevent hEvent").handle(0);
        def("cuEventSynchronize", EVENT_SYNC,
                "CUevent hEvent").handle(0);
        def("cuEventDestroy_v2", EVENT_DESTROY,
                "CUevent hEvent").handle(0);
        def("cuStreamCreate", STREAM_CREATE,
                "CUstream* phStream, unsigned int Flags").handle(0);
        def("cuStreamCreateWithPriority", STREAM_CREATE,
                "CUstream* phStream, unsigned int flags, int priority").handle(0);
        def("cuStreamSynchronize", STREAM_SYNC,
                "CUstream hStream").handle(0).stream(0);
        def("cuStreamSynchronize_ptsz", STREAM_SYNC,
                "CUstream hStream").handle(0).stream(0);
        def("cuStreamQuery", STREAM_QUERY,
                "CUstream hStream").handle(0).stream(0);
        def("cuStreamQuery_ptsz", STREAM_QUERY,
                "CUstream hStream").handle(0).stream(0);
        def("cuStreamWaitEvent", STREAM_WAIT_EVENT,
                "CUstream hStream, CUevent hEvent, unsigned int Flags").handle(0).stream(0).event(1);
        def("cuStreamWaitEvent_ptsz", STREAM_WAIT_EVENT,
                "CUstream hStream, CUevent hEvent, unsigned int Flags").handle(0).stream(0).event(1);
        def("cuStreamDestroy_v2", STREAM_DESTROY,
                "CUstream hStream").handle(0).stream(0);
        // NCCL 2.29: grow and revoke (a revoked communicator still needs destroy or abort)
        def("ncclCommGrow", COMM_GROW,
                "ncclComm_t comm, int nRanks, const ncclUniqueId* uniqueId, int rank, ncclComm_t* newcomm, ncclConfig_t* config").parentComm(0).nranks(1).uniqueId(2).rank(3).handle(4);
        def("ncclCommRevoke", COMM_REVOKE,
                "ncclComm_t comm, int revokeFlags").handle(0);
        // NCCL's memory, registrations and windows (2.28.3 and 2.29.3 alike)
        def("ncclMemAlloc", MEM_ALLOC,
                "void** ptr, size_t size").handle(0).bytes(1);
        def("ncclMemFree", MEM_FREE,
                "void* ptr").handle(0);
        def("ncclCommRegister", COMM_REGISTER,
                "const ncclComm_t comm, void* buff, size_t size, void** handle").comm(0).bytes(2).handle(3);
        def("ncclCommDeregister", COMM_DEREGISTER,
                "const ncclComm_t comm, void* handle").comm(0).handle(1);
        def("ncclCommWindowRegister", WINDOW_REGISTER,
                "ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win, int winFlags").comm(0).bytes(2).handle(3);
        def("ncclCommWindowDeregister", WINDOW_DEREGISTER,
                "ncclComm_t comm, ncclWindow_t win").comm(0).handle(1);
        // device communicators (NCCL 2.28, nccl_device/core.h): the handle is the struct's resourceWindow
        def("ncclDevCommCreate", DEVCOMM_CREATE,
                "ncclComm_t comm, ncclDevCommRequirements_t const* reqs, ncclDevComm_t* outDevComm").comm(0).handle(2);
        def("ncclDevCommDestroy", DEVCOMM_DESTROY,
                "ncclComm_t comm, ncclDevComm_t const* devComm").comm(0).handle(1);
    }

    private static final List<NativeFunction> ALL;
    /** The C parameter list of each function, by id, as in nccl.h and cuda_runtime_api.h. */
    private static final String[] C_PARAMETERS;
    /** Chained hash table of the symbols; a power of two about three times their number. */
    private static final Symbol[] TABLE;

    static {
        List<NativeFunction> all = new ArrayList<>(DEFS.size());
        Map<String, NativeFunction> bySymbol = new HashMap<>(DEFS.size() * 4);
        C_PARAMETERS = new String[DEFS.size()];
        for (Def d : DEFS) {
            NativeFunction fn = d.build(all.size());
            C_PARAMETERS[fn.id()] = d.cParameters;
            all.add(fn);
            put(bySymbol, fn.symbol(), fn);
            // NCCL exports every function also as pncclX, the name profilers and wrappers use
            if (fn.symbol().startsWith("nccl")) {
                put(bySymbol, "p" + fn.symbol(), fn);
            }
        }
        ALL = Collections.unmodifiableList(all);
        TABLE = new Symbol[Integer.highestOneBit(bySymbol.size() * 3) * 2];
        for (Map.Entry<String, NativeFunction> e : bySymbol.entrySet()) {
            int i = slot(e.getKey().hashCode());
            TABLE[i] = new Symbol(e.getKey(), e.getValue(), TABLE[i]);
        }
        DEFS.clear();
    }

    private Catalog() {
    }

    /**
     * The function a C symbol names, or null if the agent does not follow it. No allocation. A
     * caller that passes the same String object every time (JNA's Function keeps its name) is
     * answered by an identity comparison after the first time, not by comparing characters.
     */
    public static NativeFunction lookup(String symbol) {
        if (symbol == null) {
            return null;
        }
        int h = symbol.hashCode();
        for (Symbol s = TABLE[slot(h)]; s != null; s = s.next) {
            if (s.seen == symbol) {
                return s.fn;
            }
            if (s.hash == h && s.name.equals(symbol)) {
                s.seen = symbol;
                return s.fn;
            }
        }
        return null;
    }

    private static int slot(int hash) {
        return (hash ^ (hash >>> 16)) & (TABLE.length - 1);
    }

    /** One symbol of the table. */
    private static final class Symbol {
        final String name;
        final int hash;
        final NativeFunction fn;
        final Symbol next;
        /**
         * The last String object found equal to the name. Written without ordering: a String is
         * immutable and safely published, and a stale value only costs one comparison.
         */
        String seen;

        Symbol(String name, NativeFunction fn, Symbol next) {
            this.name = name;
            this.hash = name.hashCode();
            this.fn = fn;
            this.next = next;
            this.seen = name;
        }
    }

    /** Every function, indexed by {@link NativeFunction#id()}. */
    public static List<NativeFunction> all() {
        return ALL;
    }

    public static int size() {
        return ALL.size();
    }

    /**
     * The function's C parameter list, as its header declares it ({@code "void"} for none): what
     * the agent's native library ({@link CHeader}) declares its wrapper with.
     */
    public static String cParameters(NativeFunction fn) {
        return C_PARAMETERS[fn.id()];
    }

    /** The first function of {@code effect} in the catalog's order (see {@link ExitCalls}). */
    public static NativeFunction first(Effect effect) {
        for (NativeFunction fn : ALL) {
            if (fn.effect() == effect) {
                return fn;
            }
        }
        throw new IllegalStateException("the catalog has no function of effect " + effect);
    }

    private static void put(Map<String, NativeFunction> map, String symbol, NativeFunction fn) {
        if (map.put(symbol, fn) != null) {
            throw new IllegalStateException("catalog lists " + symbol + " twice");
        }
    }

    private static Def def(String symbol, Effect effect, String cParameters) {
        Def d = new Def(symbol, effect, cParameters);
        DEFS.add(d);
        return d;
    }

    /** One catalog line while the table is being built. */
    private static final class Def {
        private final String symbol;
        private final Effect effect;
        private final String cParameters;
        private int handle = NativeFunction.NONE;
        private int parentComm = NativeFunction.NONE;
        private int stream = NativeFunction.NONE;
        private int event = NativeFunction.NONE;
        private int rank = NativeFunction.NONE;
        private int nranks = NativeFunction.NONE;
        private int uniqueId = NativeFunction.NONE;
        private int device = NativeFunction.NONE;
        private int color = NativeFunction.NONE;
        private int key = NativeFunction.NONE;
        private int count = NativeFunction.NONE;
        private int rankList = NativeFunction.NONE;
        private int comm = NativeFunction.NONE;
        private int bytes = NativeFunction.NONE;

        Def(String symbol, Effect effect, String cParameters) {
            this.symbol = symbol;
            this.effect = effect;
            this.cParameters = cParameters;
        }

        Def handle(int i) {
            handle = i;
            return this;
        }

        Def parentComm(int i) {
            parentComm = i;
            return this;
        }

        Def stream(int i) {
            stream = i;
            return this;
        }

        Def event(int i) {
            event = i;
            return this;
        }

        Def rank(int i) {
            rank = i;
            return this;
        }

        Def nranks(int i) {
            nranks = i;
            return this;
        }

        Def uniqueId(int i) {
            uniqueId = i;
            return this;
        }

        Def device(int i) {
            device = i;
            return this;
        }

        Def color(int i) {
            color = i;
            return this;
        }

        Def key(int i) {
            key = i;
            return this;
        }

        Def count(int i) {
            count = i;
            return this;
        }

        Def rankList(int i) {
            rankList = i;
            return this;
        }

        Def comm(int i) {
            comm = i;
            return this;
        }

        Def bytes(int i) {
            bytes = i;
            return this;
        }

        NativeFunction build(int id) {
            return new NativeFunction(symbol, effect, handle, parentComm, stream, event, rank, nranks,
                    uniqueId, device, color, key, count, rankList, comm, bytes, id);
        }
    }
}
