package dev.ncclguard.catalog;

import static dev.ncclguard.catalog.NativeFunction.NONE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.Test;

class CatalogTest {

    // symbol, effect, handle, parentComm, stream, event, rank, nranks, uniqueId, device, color, key, count, rankList
    // positions from nccl.h (2.28) and cuda_runtime_api.h (13)
    @ParameterizedTest(name = "{0}")
    @CsvSource({
        "ncclCommInitRank,         COMM_CREATE,     0, -1, -1, -1,  3,  1,  2, -1, -1, -1, -1, -1",
        "ncclCommInitRankConfig,   COMM_CREATE,     0, -1, -1, -1,  3,  1,  2, -1, -1, -1, -1, -1",
        "ncclCommInitRankScalable, COMM_CREATE,     0, -1, -1, -1,  2,  1,  4, -1, -1, -1,  3, -1",
        "ncclCommInitAll,          COMM_CREATE_ALL, 0, -1, -1, -1, -1,  1, -1,  2, -1, -1, -1, -1",
        "ncclCommSplit,            COMM_SPLIT,      3,  0, -1, -1, -1, -1, -1, -1,  1,  2, -1, -1",
        "ncclCommShrink,           COMM_SHRINK,     3,  0, -1, -1, -1, -1, -1, -1, -1, -1,  2,  1",
        "ncclCommFinalize,         COMM_FINALIZE,   0, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1",
        "ncclCommDestroy,          COMM_DESTROY,    0, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1",
        "ncclCommAbort,            COMM_ABORT,      0, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1",
        "ncclAllReduce,            COMM_ENQUEUE,    5, -1,  6, -1, -1, -1, -1, -1, -1, -1, -1, -1",
        "ncclBroadcast,            COMM_ENQUEUE,    5, -1,  6, -1, -1, -1, -1, -1, -1, -1, -1, -1",
        "ncclBcast,                COMM_ENQUEUE,    4, -1,  5, -1, -1, -1, -1, -1, -1, -1, -1, -1",
        "ncclReduce,               COMM_ENQUEUE,    6, -1,  7, -1, -1, -1, -1, -1, -1, -1, -1, -1",
        "ncclAllGather,            COMM_ENQUEUE,    4, -1,  5, -1, -1, -1, -1, -1, -1, -1, -1, -1",
        "ncclReduceScatter,        COMM_ENQUEUE,    5, -1,  6, -1, -1, -1, -1, -1, -1, -1, -1, -1",
        "ncclAlltoAll,             COMM_ENQUEUE,    4, -1,  5, -1, -1, -1, -1, -1, -1, -1, -1, -1",
        "ncclGather,               COMM_ENQUEUE,    5, -1,  6, -1, -1, -1, -1, -1, -1, -1, -1, -1",
        "ncclScatter,              COMM_ENQUEUE,    5, -1,  6, -1, -1, -1, -1, -1, -1, -1, -1, -1",
        "ncclSend,                 COMM_ENQUEUE,    4, -1,  5, -1, -1, -1, -1, -1, -1, -1, -1, -1",
        "ncclRecv,                 COMM_ENQUEUE,    4, -1,  5, -1, -1, -1, -1, -1, -1, -1, -1, -1",
        "ncclAllReduceConfig,      COMM_ENQUEUE,    5, -1,  6, -1, -1, -1, -1, -1, -1, -1, -1, -1",
        "ncclReduceConfig,         COMM_ENQUEUE,    6, -1,  7, -1, -1, -1, -1, -1, -1, -1, -1, -1",
        "ncclGroupStart,           GROUP_START,    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1",
        "ncclGroupEnd,             GROUP_END,      -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1",
        "cudaEventCreate,          EVENT_CREATE,    0, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1",
        "cudaEventCreateWithFlags, EVENT_CREATE,    0, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1",
        "cudaEventRecord,          EVENT_RECORD,    0, -1,  1, -1, -1, -1, -1, -1, -1, -1, -1, -1",
        "cudaEventRecordWithFlags, EVENT_RECORD,    0, -1,  1, -1, -1, -1, -1, -1, -1, -1, -1, -1",
        "cudaEventQuery,           EVENT_QUERY,     0, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1",
        "cudaEventSynchronize,     EVENT_SYNC,      0, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1",
        "cudaEventDestroy,         EVENT_DESTROY,   0, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1",
        "cudaStreamCreate,         STREAM_CREATE,   0, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1",
        "cudaStreamCreateWithFlags, STREAM_CREATE,  0, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1",
        "cudaStreamCreateWithPriority, STREAM_CREATE, 0, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1",
        "cudaStreamSynchronize,    STREAM_SYNC,     0, -1,  0, -1, -1, -1, -1, -1, -1, -1, -1, -1",
        "cudaStreamQuery,          STREAM_QUERY,    0, -1,  0, -1, -1, -1, -1, -1, -1, -1, -1, -1",
        "cudaStreamWaitEvent,      STREAM_WAIT_EVENT, 0, -1, 0,  1, -1, -1, -1, -1, -1, -1, -1, -1",
        "cudaStreamDestroy,        STREAM_DESTROY,  0, -1,  0, -1, -1, -1, -1, -1, -1, -1, -1, -1",
        "cudaDeviceSynchronize,    DEVICE_SYNC,    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1",
        "cudaSetDevice,            SET_DEVICE,     -1, -1, -1, -1, -1, -1, -1,  0, -1, -1, -1, -1",
    })
    void everyListedFunctionHasItsEffectAndArgumentPositions(String symbol, Effect effect, int handle,
            int parentComm, int stream, int event, int rank, int nranks, int uniqueId, int device,
            int color, int key, int count, int rankList) {
        NativeFunction fn = Catalog.lookup(symbol);
        assertNotNull(fn, symbol);
        assertEquals(symbol, fn.symbol());
        assertEquals(effect, fn.effect());
        assertEquals(List.of(handle, parentComm, stream, event, rank, nranks, uniqueId, device, color, key,
                        count, rankList),
                List.of(fn.handle(), fn.parentComm(), fn.stream(), fn.event(), fn.rank(), fn.nranks(),
                        fn.uniqueId(), fn.device(), fn.color(), fn.key(), fn.count(), fn.rankList()));
    }

    // symbol, effect, handle, parentComm, rank, nranks, uniqueId, comm, bytes: NCCL 2.28.3 and 2.29.3
    @ParameterizedTest(name = "{0}")
    @CsvSource({
        "ncclCommGrow,             COMM_GROW,          4,  0,  3,  1,  2, -1, -1",
        "ncclCommRevoke,           COMM_REVOKE,        0, -1, -1, -1, -1, -1, -1",
        "ncclMemAlloc,             MEM_ALLOC,          0, -1, -1, -1, -1, -1,  1",
        "ncclMemFree,              MEM_FREE,           0, -1, -1, -1, -1, -1, -1",
        "ncclCommRegister,         COMM_REGISTER,      3, -1, -1, -1, -1,  0,  2",
        "ncclCommDeregister,       COMM_DEREGISTER,    1, -1, -1, -1, -1,  0, -1",
        "ncclCommWindowRegister,   WINDOW_REGISTER,    3, -1, -1, -1, -1,  0,  2",
        "ncclCommWindowDeregister, WINDOW_DEREGISTER,  1, -1, -1, -1, -1,  0, -1",
        "ncclDevCommCreate,        DEVCOMM_CREATE,     2, -1, -1, -1, -1,  0, -1",
        "ncclDevCommDestroy,       DEVCOMM_DESTROY,    1, -1, -1, -1, -1,  0, -1",
    })
    void ncclsOtherResourcesHaveTheirEffectAndArgumentPositions(String symbol, Effect effect, int handle,
            int parentComm, int rank, int nranks, int uniqueId, int comm, int bytes) {
        NativeFunction fn = Catalog.lookup(symbol);
        assertNotNull(fn, symbol);
        assertEquals(effect, fn.effect());
        assertEquals(List.of(handle, parentComm, rank, nranks, uniqueId, comm, bytes),
                List.of(fn.handle(), fn.parentComm(), fn.rank(), fn.nranks(), fn.uniqueId(), fn.comm(), fn.bytes()));
    }

    /**
     * The parameter lists as NVIDIA/nccl v2.28.3-1 and v2.29.3-1 declare them (src/nccl.h.in;
     * src/include/nccl_device/core.h, whose unnamed parameters are named comm and reqs here).
     */
    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', value = {
        "ncclCommGrow | ncclComm_t comm, int nRanks, const ncclUniqueId* uniqueId, int rank, ncclComm_t* newcomm, ncclConfig_t* config",
        "ncclCommRevoke | ncclComm_t comm, int revokeFlags",
        "ncclMemAlloc | void** ptr, size_t size",
        "ncclMemFree | void* ptr",
        "ncclCommRegister | const ncclComm_t comm, void* buff, size_t size, void** handle",
        "ncclCommDeregister | const ncclComm_t comm, void* handle",
        "ncclCommWindowRegister | ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win, int winFlags",
        "ncclCommWindowDeregister | ncclComm_t comm, ncclWindow_t win",
        "ncclDevCommCreate | ncclComm_t comm, ncclDevCommRequirements_t const* reqs, ncclDevComm_t* outDevComm",
        "ncclDevCommDestroy | ncclComm_t comm, ncclDevComm_t const* devComm",
    })
    void ncclsOtherResourcesAreDeclaredAsNcclDeclaresThem(String symbol, String parameters) {
        assertEquals(parameters, Catalog.cParameters(Catalog.lookup(symbol)));
    }

    @Test
    void ncclProfilingAliasesNameTheSameFunction() {
        for (NativeFunction fn : Catalog.all()) {
            if (fn.symbol().startsWith("nccl")) {
                assertSame(fn, Catalog.lookup("p" + fn.symbol()), fn.symbol());
            }
        }
        assertSame(Catalog.lookup("ncclAllReduce"), Catalog.lookup("pncclAllReduce"));
    }

    @Test
    void cudaFunctionsHaveNoProfilingAlias() {
        assertNull(Catalog.lookup("pcudaEventRecord"));
    }

    @Test
    void unknownOrNullSymbolIsNull() {
        assertNull(Catalog.lookup("ncclGetUniqueId"));
        assertNull(Catalog.lookup("ncclallreduce"));
        assertNull(Catalog.lookup(""));
        assertNull(Catalog.lookup(null));
    }

    @Test
    void idsAreDenseIndexesOfAll() {
        Set<Integer> ids = new HashSet<>();
        List<NativeFunction> all = Catalog.all();
        assertEquals(Catalog.size(), all.size());
        for (int i = 0; i < all.size(); i++) {
            assertEquals(i, all.get(i).id());
            ids.add(all.get(i).id());
        }
        assertEquals(all.size(), ids.size());
    }

    @Test
    void everyFunctionThatNamesAHandleOrStreamUsesAValidPosition() {
        for (NativeFunction fn : Catalog.all()) {
            switch (fn.effect()) {
                case GROUP_START, GROUP_END, DEVICE_SYNC, SET_DEVICE -> assertEquals(NONE, fn.handle(), fn.symbol());
                default -> assertEquals(true, fn.handle() >= 0, fn.symbol());
            }
            if (fn.effect() == Effect.COMM_ENQUEUE) {
                assertEquals(fn.handle() + 1, fn.stream(), fn.symbol() + ": stream follows comm");
            }
        }
    }

    @Test
    void lookupAllocatesNothing() {
        com.sun.management.ThreadMXBean threads =
                (com.sun.management.ThreadMXBean) java.lang.management.ManagementFactory.getThreadMXBean();
        String[] symbols = {"ncclAllReduce", "pncclAllReduce", "cudaEventRecord", "cudaMalloc", "cudaEventQuery"};
        long found = 0;
        for (int round = 0; round < 2; round++) { // the first round warms up
            long before = threads.getThreadAllocatedBytes(Thread.currentThread().getId());
            for (int i = 0; i < 200_000; i++) {
                if (Catalog.lookup(symbols[i % symbols.length]) != null) {
                    found++;
                }
            }
            long bytes = threads.getThreadAllocatedBytes(Thread.currentThread().getId()) - before;
            if (round == 1) {
                assertEquals(true, bytes < 16 * 1024, bytes + " bytes for 200000 lookups");
            }
        }
        assertEquals(2 * 160_000, found);
    }
}
