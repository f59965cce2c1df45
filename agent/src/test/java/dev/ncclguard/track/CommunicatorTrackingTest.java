package dev.ncclguard.track;

import static dev.ncclguard.track.Driver.NOCOLOR;
import static dev.ncclguard.track.Driver.uniqueId;
import static dev.ncclguard.track.FakeArgs.args;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ncclguard.catalog.Catalog;
import dev.ncclguard.catalog.Kind;
import dev.ncclguard.catalog.Status;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class CommunicatorTrackingTest {
    private final AtomicLong clock = new AtomicLong(1_000);
    private final Driver d = new Driver(new Tracker(new Tracker.Config(true, clock::get)));

    private Snapshot snap() {
        return d.tracker.snapshot();
    }

    private HandleView onlyComm() {
        List<HandleView> comms = snap().comms();
        assertEquals(1, comms.size(), comms.toString());
        return comms.get(0);
    }

    private static String commId(HandleView v) {
        return (String) v.details().get("commId");
    }

    @Test
    void initRankCommunicatorIsALeakUntilDestroyed() {
        clock.set(42_000);
        d.initRank(0xA000, 4, 2, uniqueId(1));

        HandleView c = onlyComm();
        assertEquals(Kind.COMM, c.kind());
        assertEquals(0xA000, c.handle());
        assertEquals("0xa000", c.hexHandle());
        assertEquals("ncclCommInitRank", c.api());
        assertEquals(Driver.BRIDGE, c.bridge());
        assertEquals(Thread.currentThread().getName(), c.thread());
        assertEquals(42_000, c.createdAtMillis());
        assertEquals(FakeArgs.ACCESS, c.access());
        assertEquals(List.of("rank", "nranks", "device", "commId"), List.copyOf(c.details().keySet()));
        assertEquals(2, c.details().get("rank"));
        assertEquals(4, c.details().get("nranks"));
        assertEquals(0, c.details().get("device"));
        assertEquals(1, snap().liveComms());

        d.destroy(0xA000);
        Snapshot s = snap();
        assertTrue(s.comms().isEmpty());
        assertEquals(1, s.commsCreated());
        assertEquals(1, s.commsReleased());
        assertEquals(0, s.liveComms());
    }

    @Test
    void failedInitIsNotTracked() {
        d.call("ncclCommInitRank", args().out(0, 0xA000).i(1, 2).bytes(2, uniqueId(1)), 5);
        assertTrue(snap().comms().isEmpty());
        assertEquals(0, snap().commsCreated());
    }

    @Test
    void nonblockingInitInProgressIsTrackedOnceItsHandleIsWritten() {
        d.call("ncclCommInitRankConfig", args().out(0, 0xA000).i(1, 2).bytes(2, uniqueId(1)).i(3, 1),
                Status.NCCL_IN_PROGRESS);
        assertEquals(0xA000, onlyComm().handle());
        assertEquals("ncclCommInitRankConfig", onlyComm().api());

        d.call("ncclCommInitRankConfig", args().out(0, 0).i(1, 2).bytes(2, uniqueId(1)).i(3, 1),
                Status.NCCL_IN_PROGRESS);
        assertEquals(1, snap().commsCreated());
    }

    @Test
    void abortEndsACommunicator() {
        d.initRank(0xA000, 2, 0, uniqueId(1));
        d.call("ncclCommAbort", args().handle(0, 0xA000));
        assertTrue(snap().comms().isEmpty());
        assertEquals(1, snap().commsReleased());
    }

    @Test
    void failedDestroyKeepsTheCommunicator() {
        d.initRank(0xA000, 2, 0, uniqueId(1));
        d.call("ncclCommDestroy", args().handle(0, 0xA000), 5);
        assertEquals(0xA000, onlyComm().handle());
        assertEquals(0, snap().commsReleased());
    }

    @Test
    void destroyOfAnUnknownCommunicatorChangesNothing() {
        d.initRank(0xA000, 2, 0, uniqueId(1));
        d.destroy(0xB000);
        assertEquals(0xA000, onlyComm().handle());
        assertEquals(0, snap().commsReleased());
    }

    @Test
    void commIdIs16HexDigitsThatEveryBitOfTheUniqueIdChanges() {
        byte[] id = uniqueId(7);
        d.initRank(0xA000, 2, 0, id);
        String base = commId(onlyComm());
        assertTrue(base.matches("[0-9a-f]{16}"), base);
        java.util.Set<Long> seen = new java.util.HashSet<>();
        seen.add(CommIds.ofUniqueId(id));
        for (int bit = 0; bit < id.length * 8; bit++) {
            byte[] flipped = id.clone();
            flipped[bit / 8] ^= (byte) (1 << (bit % 8));
            assertTrue(seen.add(CommIds.ofUniqueId(flipped)), "bit " + bit + " collides");
        }
    }

    @Test
    void everyRankOfOneUniqueIdHasTheSameCommIdAndOtherIdsDiffer() {
        Driver rank0 = new Driver(new Tracker());
        Driver rank1 = new Driver(new Tracker());
        rank0.initRank(0xA000, 2, 0, uniqueId(1));
        rank1.initRank(0xB000, 2, 1, uniqueId(1));
        rank1.initRank(0xC000, 2, 1, uniqueId(2));
        String id0 = commId(rank0.tracker.snapshot().comms().get(0));
        List<HandleView> r1 = rank1.tracker.snapshot().comms();
        assertEquals(id0, commId(r1.get(0)));
        assertNotEquals(id0, commId(r1.get(1)));
    }

    @Test
    void unreadableUniqueIdLeavesCommIdOut() {
        d.call("ncclCommInitRank", args().out(0, 0xA000).i(1, 2).i(3, 0));
        HandleView c = onlyComm();
        assertFalse(c.details().containsKey("commId"));
        assertEquals(0, c.details().get("rank"));
    }

    @Test
    void initAllCreatesOneCommunicatorPerDevlistEntryWithOneSharedCommId() {
        d.call("ncclCommInitAll", args().outs(0, 0xA000, 0xB000).i(1, 2).ints(2, 3, 1));
        List<HandleView> comms = snap().comms();
        assertEquals(2, comms.size());
        assertEquals(0xA000, comms.get(0).handle());
        assertEquals(0, comms.get(0).details().get("rank"));
        assertEquals(3, comms.get(0).details().get("device"));
        assertEquals(3, comms.get(0).device());
        assertEquals(0xB000, comms.get(1).handle());
        assertEquals(1, comms.get(1).details().get("rank"));
        assertEquals(1, comms.get(1).details().get("device"));
        assertEquals(2, comms.get(1).details().get("nranks"));
        assertEquals(commId(comms.get(0)), commId(comms.get(1)));
        assertEquals(16, commId(comms.get(0)).length());
        assertEquals(2, snap().commsCreated());

        d.call("ncclCommInitAll", args().outs(0, 0xC000).i(1, 1));
        assertNotEquals(commId(comms.get(0)), commId(snap().comms().get(2)));
    }

    @Test
    void initAllWithoutDevlistUsesTheFirstNdevDevices() {
        d.call("ncclCommInitAll", args().outs(0, 0xA000, 0xB000, 0xC000).i(1, 3));
        List<HandleView> comms = snap().comms();
        for (int i = 0; i < 3; i++) {
            assertEquals(i, comms.get(i).details().get("device"));
            assertEquals(i, comms.get(i).details().get("rank"));
            assertEquals(3, comms.get(i).details().get("nranks"));
        }
    }

    @Test
    void deviceIsTheCallingThreadsCurrentDevice() throws Exception {
        d.setDevice(2);
        d.call("cudaSetDevice", args().i(0, 5), 101); // cudaErrorInvalidDevice: no change
        d.initRank(0xA000, 2, 0, uniqueId(1));
        Thread other = new Thread(() -> d.initRank(0xB000, 2, 1, uniqueId(1)));
        other.start();
        other.join();
        List<HandleView> comms = snap().comms();
        assertEquals(2, comms.get(0).details().get("device"));
        assertEquals(0, comms.get(1).details().get("device"));
    }

    @Test
    void splitChildHasTheSameCommIdOnEveryRankWhateverItsKey() {
        Driver rank0 = new Driver(new Tracker());
        Driver rank1 = new Driver(new Tracker());
        rank0.initRank(0xA000, 2, 0, uniqueId(1));
        rank1.initRank(0xB000, 2, 1, uniqueId(1));
        rank0.setDevice(1);
        rank0.split(0xA000, 4, 0, 0xA100);
        rank1.split(0xB000, 4, 9, 0xB100);

        HandleView child0 = rank0.tracker.snapshot().comms().get(1);
        HandleView child1 = rank1.tracker.snapshot().comms().get(1);
        String parentId = commId(rank0.tracker.snapshot().comms().get(0));
        assertEquals("ncclCommSplit", child0.api());
        assertEquals(commId(child0), commId(child1));
        assertNotEquals(parentId, commId(child0));
        assertEquals(parentId, child0.details().get("parentCommId"));
        assertEquals(List.of("device", "commId", "parentCommId"), List.copyOf(child0.details().keySet()));
        assertEquals(0, child0.details().get("device"), "the parent's device, not the thread's");
    }

    @Test
    void eachSplitOfAParentAndEachColorGetsItsOwnCommId() {
        d.initRank(0xA000, 2, 0, uniqueId(1));
        d.split(0xA000, 4, 0, 0xA100);
        d.split(0xA000, 4, 0, 0xA200);
        d.split(0xA000, 5, 0, 0xA300);
        List<HandleView> comms = snap().comms();
        assertEquals(4, comms.size());
        assertEquals(3, comms.stream().skip(1).map(CommunicatorTrackingTest::commId).distinct().count());
    }

    @Test
    void aRankOutsideEverySplitColorStillCountsTheSplit() {
        Driver a = new Driver(new Tracker());
        Driver b = new Driver(new Tracker());
        a.initRank(0xA000, 2, 0, uniqueId(1));
        b.initRank(0xB000, 2, 1, uniqueId(1));
        a.split(0xA000, NOCOLOR, 0, 0); // NCCL_SPLIT_NOCOLOR: success, no communicator
        b.split(0xB000, 7, 0, 0xB100);
        a.split(0xA000, 3, 0, 0xA200);
        b.split(0xB000, 3, 0, 0xB200);

        List<HandleView> ac = a.tracker.snapshot().comms();
        List<HandleView> bc = b.tracker.snapshot().comms();
        assertEquals(2, ac.size(), "no communicator for the NOCOLOR rank");
        assertEquals(commId(bc.get(2)), commId(ac.get(1)));
    }

    @Test
    void failedSplitCreatesNothingAndDoesNotCount() {
        Driver a = new Driver(new Tracker());
        Driver b = new Driver(new Tracker());
        a.initRank(0xA000, 2, 0, uniqueId(1));
        b.initRank(0xB000, 2, 1, uniqueId(1));
        a.call("ncclCommSplit", args().handle(0, 0xA000).i(1, 1).out(3, 0xA100), 3);
        a.split(0xA000, 1, 0, 0xA200);
        b.split(0xB000, 1, 0, 0xB200);
        assertEquals(2, a.tracker.snapshot().comms().size());
        assertEquals(commId(b.tracker.snapshot().comms().get(1)), commId(a.tracker.snapshot().comms().get(1)));
    }

    @Test
    void splitOfAnUnknownParentIsTrackedWithoutCommId() {
        d.split(0xF000, 1, 0, 0xA100);
        HandleView c = onlyComm();
        assertEquals(0xA100, c.handle());
        assertFalse(c.details().containsKey("commId"));
        assertFalse(c.details().containsKey("parentCommId"));
    }

    @Test
    void shrinkChildIsRenumberedAndNamedAlikeOnEverySurvivingRank() {
        Driver rank3 = new Driver(new Tracker());
        Driver rank0 = new Driver(new Tracker());
        rank3.initRank(0xA000, 4, 3, uniqueId(1));
        rank0.initRank(0xB000, 4, 0, uniqueId(1));
        rank3.shrink(0xA000, 0xA100, 1);
        rank0.shrink(0xB000, 0xB100, 1);

        HandleView c3 = rank3.tracker.snapshot().comms().get(1);
        HandleView c0 = rank0.tracker.snapshot().comms().get(1);
        assertEquals("ncclCommShrink", c3.api());
        assertEquals(List.of("rank", "nranks", "device", "commId", "parentCommId"),
                List.copyOf(c3.details().keySet()));
        assertEquals(2, c3.details().get("rank"));
        assertEquals(3, c3.details().get("nranks"));
        assertEquals(0, c0.details().get("rank"));
        assertEquals(commId(c0), commId(c3));
        assertEquals(commId(rank3.tracker.snapshot().comms().get(0)), c3.details().get("parentCommId"));

        rank3.split(0xA000, 1, 0, 0xA200);
        assertNotEquals(commId(c3), commId(rank3.tracker.snapshot().comms().get(2)),
                "a shrink and a split are different children");
    }

    @Test
    void initRankScalableIsNamedAfterItsFirstUniqueId() {
        byte[] ids = new byte[2 * Catalog.UNIQUE_ID_BYTES];
        System.arraycopy(uniqueId(3), 0, ids, 0, Catalog.UNIQUE_ID_BYTES);
        System.arraycopy(uniqueId(4), 0, ids, Catalog.UNIQUE_ID_BYTES, Catalog.UNIQUE_ID_BYTES);
        d.call("ncclCommInitRankScalable", args().out(0, 0xA000).i(1, 8).i(2, 5).i(3, 2).bytes(4, ids));
        Driver other = new Driver(new Tracker());
        other.initRank(0xB000, 8, 0, uniqueId(3));

        HandleView c = onlyComm();
        assertEquals("ncclCommInitRankScalable", c.api());
        assertEquals(5, c.details().get("rank"));
        assertEquals(8, c.details().get("nranks"));
        assertEquals(commId(other.tracker.snapshot().comms().get(0)), commId(c));
    }

    @Test
    void finalizeIsRecordedButIsNotAnEnd() {
        d.initRank(0xA000, 2, 0, uniqueId(1));
        d.call("ncclCommFinalize", args().handle(0, 0xA000));
        HandleView c = onlyComm();
        assertEquals(true, c.details().get("finalized"));
        assertEquals(List.of("rank", "nranks", "device", "commId", "finalized"), List.copyOf(c.details().keySet()));
        d.destroy(0xA000);
        assertTrue(snap().comms().isEmpty());
    }

    @Test
    void failedFinalizeIsNotRecorded() {
        d.initRank(0xA000, 2, 0, uniqueId(1));
        d.call("ncclCommFinalize", args().handle(0, 0xA000), 5);
        assertFalse(onlyComm().details().containsKey("finalized"));
    }

    @Test
    void createAtAnAddressStillHeldReplacesTheOldRecordAndCountsItReleased() {
        d.initRank(0xA000, 2, 0, uniqueId(1));
        d.initRank(0xA000, 2, 1, uniqueId(2));
        assertEquals(1, onlyComm().details().get("rank"));
        assertEquals(2, snap().commsCreated());
        assertEquals(1, snap().commsReleased());
    }

    @Test
    void releaseRacingWithReuseOfItsAddressEndsOnlyTheRecordItSaw() {
        d.initRank(0xA000, 2, 0, uniqueId(1));
        FakeArgs destroy = args().handle(0, 0xA000);
        long token = d.enter("ncclCommDestroy", destroy);
        // the native destroy has freed 0xA000; another thread's init gets it before our exit
        d.call("ncclCommInitRankConfig", args().out(0, 0xA000).i(1, 2).bytes(2, uniqueId(2)).i(3, 0));
        d.exit("ncclCommDestroy", destroy, 0, token);

        HandleView c = onlyComm();
        assertEquals("ncclCommInitRankConfig", c.api());
        assertEquals(2, snap().commsCreated());
        assertEquals(1, snap().commsReleased());
        assertEquals(1, snap().liveComms());
    }

    @Test
    void addressReusedAfterReleaseIsANewHandle() {
        d.initRank(0xA000, 2, 0, uniqueId(1));
        d.destroy(0xA000);
        clock.set(9_000);
        d.call("ncclCommInitRankConfig", args().out(0, 0xA000).i(1, 2).bytes(2, uniqueId(2)).i(3, 1));
        HandleView c = onlyComm();
        assertEquals("ncclCommInitRankConfig", c.api());
        assertEquals(9_000, c.createdAtMillis());
        assertFalse(c.details().containsKey("finalized"));
    }

    @Test
    void stacksOnCaptureTheCreatingFramesUnformatted() {
        d.initRank(0xA000, 2, 0, uniqueId(1));
        Throwable creation = onlyComm().creation();
        assertTrue(List.of(creation.getStackTrace()).stream()
                .anyMatch(f -> f.getMethodName().equals("stacksOnCaptureTheCreatingFramesUnformatted")));
    }

    @Test
    void stacksOffCaptureNothing() {
        Driver off = new Driver(new Tracker(new Tracker.Config(false, clock::get)));
        off.initRank(0xA000, 2, 0, uniqueId(1));
        off.eventCreate(0xE000);
        off.record(0xE000, 0);
        assertEquals(null, off.tracker.snapshot().comms().get(0).creation());
        assertEquals(null, off.tracker.snapshot().events().get(0).creation());
        assertEquals(null, off.tracker.snapshot().streams().get(0).creation());
    }

    @Test
    void startedAtComesFromTheClock() {
        clock.set(77);
        assertEquals(77, new Tracker(new Tracker.Config(true, clock::get)).startedAtMillis());
    }
}
