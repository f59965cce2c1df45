package dev.ncclguard.track;

import static dev.ncclguard.track.Driver.uniqueId;
import static dev.ncclguard.track.FakeArgs.args;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ncclguard.catalog.Kind;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** NCCL 2.28/2.29's other resources: memory, registrations, windows, device communicators, grow, revoke. */
class ResourceTrackingTest {
    private static final long COMM = 0xA000;
    private final AtomicLong clock = new AtomicLong(1_000);
    private final Driver d = new Driver(new Tracker(new Tracker.Config(true, clock::get)));

    private Snapshot snap() {
        return d.tracker.snapshot();
    }

    private void comm() {
        d.initRank(COMM, 2, 0, uniqueId(1));
    }

    private void memAlloc(long ptr, long bytes) {
        d.call("ncclMemAlloc", args().out(0, ptr).handle(1, bytes));
    }

    private void memFree(long ptr) {
        d.call("ncclMemFree", args().handle(0, ptr));
    }

    private void register(long handle, long bytes) {
        d.call("ncclCommRegister", args().handle(0, COMM).handle(1, 0x7000).handle(2, bytes).out(3, handle));
    }

    private void deregister(long handle) {
        d.call("ncclCommDeregister", args().handle(0, COMM).handle(1, handle));
    }

    private void window(long win, long bytes) {
        d.call("ncclCommWindowRegister", args().handle(0, COMM).handle(1, 0x7000).handle(2, bytes).out(3, win).i(4, 1));
    }

    /** An ncclDevComm struct of NCCL 2.29.3's 200 bytes: rank, nRanks, and resourceWindow at offset 32. */
    private static byte[] devComm(int rank, int nranks, long resourceWindow) {
        ByteBuffer b = ByteBuffer.allocate(200).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(0, rank).putInt(4, nranks).putLong(32, resourceWindow);
        return b.array();
    }

    private void devCommCreate(byte[] struct) {
        d.call("ncclDevCommCreate", args().handle(0, COMM).handle(1, 0x8000).bytes(2, struct));
    }

    private void devCommDestroy(byte[] struct) {
        d.call("ncclDevCommDestroy", args().handle(0, COMM).bytes(1, struct));
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> registry(HandleView comm, String key) {
        return (Map<String, Object>) comm.details().get(key);
    }

    @Test
    void memoryNeverFreedIsALeakWithItsSizeAndDevice() {
        d.call("cudaSetDevice", args().i(0, 3));
        memAlloc(0x5000, 1 << 20);
        List<HandleView> memory = snap().memory();
        assertEquals(1, memory.size());
        HandleView m = memory.get(0);
        assertEquals(Kind.MEMORY, m.kind());
        assertEquals(0x5000, m.handle());
        assertEquals("ncclMemAlloc", m.api());
        assertEquals(Map.of("bytes", 1L << 20, "device", 3), m.details());
        assertEquals(3, m.device());
        assertTrue(m.creation() != null, "creating stack");
    }

    @Test
    void freedMemoryIsNoLeak() {
        memAlloc(0x5000, 4096);
        memFree(0x5000);
        assertEquals(List.of(), snap().memory());
        assertFalse(snap().hasLeaks());
    }

    @Test
    void freeOfMemoryNcclMemAllocDidNotMakeChangesNothing() {
        memAlloc(0x5000, 4096);
        memFree(0x6000); // cudaMalloc's, which ncclMemFree also frees
        assertEquals(1, snap().memory().size());
    }

    @Test
    void failedFreeKeepsTheMemory() {
        memAlloc(0x5000, 4096);
        d.call("ncclMemFree", args().handle(0, 0x5000), 5);
        assertEquals(1, snap().memory().size());
    }

    @Test
    void memoryCleanupClaimedParksTheApplicationsFree() {
        memAlloc(0x5000, 4096);
        assertTrue(snap().memory().get(0).claim().claimForCleanup());
        assertEquals(Tracker.CLAIMED_BY_CLEANUP, d.enter("ncclMemFree", args().handle(0, 0x5000)));
    }

    @Test
    void registrationsAreCountedOnTheirCommunicatorWithWhatIsStillRegistered() {
        comm();
        register(0x1, 4096);
        register(0x2, 8192);
        register(0x2, 100); // NCCL's cache: a range inside the registered one gets its handle again
        deregister(0x2);
        HandleView c = snap().comms().get(0);
        assertEquals(Map.of("registered", 3L, "stillRegistered", 2L, "bytes", 12288L), registry(c, "registrations"));
        assertNull(c.details().get("windows"));
        deregister(0x2);
        assertEquals(Map.of("registered", 3L, "stillRegistered", 1L, "bytes", 4096L),
                registry(snap().comms().get(0), "registrations"));
    }

    @Test
    void windowsAreCountedApartFromRegistrations() {
        comm();
        window(0x10, 65536);
        window(0x11, 65536);
        d.call("ncclCommWindowDeregister", args().handle(0, COMM).handle(1, 0x10));
        HandleView c = snap().comms().get(0);
        assertEquals(Map.of("registered", 2L, "stillRegistered", 1L, "bytes", 65536L), registry(c, "windows"));
        assertNull(c.details().get("registrations"));
    }

    @Test
    void theLiveCountsGrowWithRegistrationsNeverDeregisteredAndDropWithTheirCommunicator() {
        comm();
        memAlloc(0x5000, 1000);
        register(0x1, 4096);
        register(0x3, 4096);
        window(0x10, 512);
        devCommCreate(devComm(0, 2, 0x20));
        ResourceCounts live = d.tracker.resourceCounts();
        assertEquals(new ResourceCounts(1, 1000, 1, 0, 2, 8192, 1, 512, 1), live);
        d.destroy(COMM);
        assertEquals(new ResourceCounts(1, 1000, 1, 0, 0, 0, 0, 0, 0), d.tracker.resourceCounts());
    }

    @Test
    void deviceCommunicatorNeverDestroyedIsALeakNamingItsCommunicator() {
        comm();
        byte[] struct = devComm(0, 2, 0x20);
        devCommCreate(struct);
        List<HandleView> devComms = snap().devComms();
        assertEquals(1, devComms.size());
        HandleView v = devComms.get(0);
        assertEquals(Kind.DEVCOMM, v.kind());
        assertEquals(0x20, v.handle());
        assertEquals("0xa000", v.details().get("comm"));
        assertEquals(0, v.details().get("rank"));
        assertEquals(2, v.details().get("nranks"));
        assertEquals(snap().comms().get(0).details().get("commId"), v.details().get("commId"));
        assertEquals(COMM, v.devComm().comm());
        assertArrayEquals(struct, v.devComm().bytes());
        assertEquals(1, snap().comms().get(0).details().get("deviceCommunicators"));
    }

    @Test
    void deviceCommunicatorDestroyedThroughACopyOfItsStructIsNoLeak() {
        comm();
        devCommCreate(devComm(0, 2, 0x20));
        devCommCreate(devComm(0, 2, 0x21));
        devCommDestroy(devComm(0, 2, 0x20).clone());
        List<HandleView> left = snap().devComms();
        assertEquals(1, left.size());
        assertEquals(0x21, left.get(0).handle());
    }

    @Test
    void deviceCommunicatorsGoWithTheirCommunicator() {
        comm();
        devCommCreate(devComm(0, 2, 0x20));
        d.destroy(COMM);
        assertEquals(List.of(), snap().devComms());
        assertFalse(snap().hasLeaks());
    }

    @Test
    void structOfNccl228sSizeIsReadAndPaddedForCleanup() {
        comm();
        byte[] struct = new byte[88];
        struct[32] = 0x20;
        devCommCreate(struct);
        HandleView v = snap().devComms().get(0);
        assertEquals(0x20, v.handle());
        assertEquals(200, v.devComm().bytes().length);
    }

    @Test
    void revokedCommunicatorNeverDestroyedIsReportedRevoked() {
        comm();
        d.call("ncclCommRevoke", args().handle(0, COMM).i(1, 0));
        HandleView c = snap().comms().get(0);
        assertEquals(Boolean.TRUE, c.details().get("revoked"));
    }

    @Test
    void revokedCommunicatorDestroyedIsNoLeak() {
        comm();
        d.call("ncclCommRevoke", args().handle(0, COMM).i(1, 0));
        d.destroy(COMM);
        assertFalse(snap().hasLeaks());
    }

    /**
     * A grow of a 2-rank communicator to 3: rank 0 made the id and passes it, rank 1 passes none,
     * the new rank 2 has only the id. Every rank names the new communicator by NCCL's commHash.
     */
    @Test
    void grownCommunicatorHasNcclsCommHashOnEveryRankAndNamesItsParentOnTheExistingOnes() {
        byte[] id = uniqueId(5);
        Driver rank0 = new Driver(new Tracker());
        Driver rank1 = new Driver(new Tracker());
        Driver rank2 = new Driver(new Tracker());
        rank0.initRank(0xA000, 2, 0, id);
        rank1.initRank(0xB000, 2, 1, id);
        long growMagic = CommIds.ncclHashCombine(CommIds.ncclMagic(id), 1);
        byte[] growId = new byte[128];
        ByteBuffer.wrap(growId).order(ByteOrder.LITTLE_ENDIAN).putLong(0, growMagic);
        rank0.call("ncclCommGrow", args().handle(0, 0xA000).i(1, 3).bytes(2, growId).i(3, -1).out(4, 0xA100));
        rank1.call("ncclCommGrow", args().handle(0, 0xB000).i(1, 3).i(3, -1).out(4, 0xB100));
        rank2.call("ncclCommGrow", args().i(1, 3).bytes(2, growId).i(3, 2).out(4, 0xC100));
        String expected = CommIds.hex(CommIds.ncclHashCombine(growMagic, 3));
        HandleView g0 = rank0.tracker.snapshot().comms().get(1);
        HandleView g1 = rank1.tracker.snapshot().comms().get(1);
        HandleView g2 = rank2.tracker.snapshot().comms().get(0);
        assertEquals(expected, g0.details().get("commId"));
        assertEquals(expected, g1.details().get("commId"));
        assertEquals(expected, g2.details().get("commId"));
        assertEquals("ncclCommGrow", g2.api());
        assertEquals(List.of(0, 1, 2), List.of(g0.details().get("rank"), g1.details().get("rank"), g2.details().get("rank")));
        assertEquals(3, g2.details().get("nranks"));
        String parent = (String) rank0.tracker.snapshot().comms().get(0).details().get("commId");
        assertEquals(parent, g0.details().get("parentCommId"));
        assertEquals(parent, g1.details().get("parentCommId"));
        assertNull(g2.details().get("parentCommId"));
    }

    @Test
    void aGrowAfterASplitCountsAsNcclsSecondChild() {
        byte[] id = uniqueId(5);
        d.initRank(0xA000, 2, 1, id);
        d.split(0xA000, 0, 0, 0xA010);
        d.call("ncclCommGrow", args().handle(0, 0xA000).i(1, 3).i(3, -1).out(4, 0xA100));
        long magic = CommIds.ncclHashCombine(CommIds.ncclMagic(id), 2);
        assertEquals(CommIds.hex(CommIds.ncclHashCombine(magic, 3)), snap().comms().get(2).details().get("commId"));
    }
}
