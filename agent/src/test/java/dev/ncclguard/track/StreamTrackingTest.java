package dev.ncclguard.track;

import static dev.ncclguard.track.Driver.NOT_READY;
import static dev.ncclguard.track.FakeArgs.args;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ncclguard.catalog.Kind;
import dev.ncclguard.catalog.Status;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class StreamTrackingTest {
    private static final long COMM = 0xA000;
    private static final long STREAM = 0x5000;

    private final Driver d = new Driver(new Tracker());

    @BeforeEach
    void communicator() {
        d.initRank(COMM, 1, 0, Driver.uniqueId(1));
    }

    private List<HandleView> unsynced() {
        return d.tracker.snapshot().streams();
    }

    private long pendingOps(long stream) {
        return unsynced().stream().filter(s -> s.handle() == stream)
                .mapToLong(s -> (Long) s.details().get("pendingOps")).sum();
    }

    @Test
    void workOnACreatedStreamIsPendingUntilStreamSynchronize() {
        d.setDevice(3);
        d.call("cudaStreamCreateWithFlags", args().out(0, STREAM).i(1, 1));
        assertTrue(unsynced().isEmpty(), "a stream without work is no leak");
        d.allReduce(COMM, STREAM);
        d.call("ncclSend", args().handle(4, COMM).handle(5, STREAM));

        HandleView s = unsynced().get(0);
        assertEquals(Kind.STREAM, s.kind());
        assertEquals(STREAM, s.handle());
        assertEquals("cudaStreamCreateWithFlags", s.api());
        assertEquals(List.of("pendingOps", "device"), List.copyOf(s.details().keySet()));
        assertEquals(2L, s.details().get("pendingOps"));
        assertEquals(3, s.details().get("device"));

        d.streamSync(STREAM);
        assertTrue(unsynced().isEmpty());
        assertEquals(1, d.tracker.snapshot().liveStreams());
    }

    @Test
    void failedWorkIsNotCounted() {
        d.streamCreate(STREAM);
        d.call("ncclAllReduce", args().handle(5, COMM).handle(6, STREAM), 5);
        assertTrue(unsynced().isEmpty());
    }

    @Test
    void streamQuerySuccessCompletesTheWorkAndNotReadyDoesNot() {
        d.call("cudaStreamCreateWithPriority", args().out(0, STREAM).i(1, 0).i(2, -1));
        d.allReduce(COMM, STREAM);
        d.streamQuery(STREAM, NOT_READY);
        assertEquals(1, pendingOps(STREAM));
        d.streamQuery(STREAM, 0);
        assertEquals(0, pendingOps(STREAM));
    }

    @Test
    void failedStreamSynchronizeCompletesNothing() {
        d.streamCreate(STREAM);
        d.allReduce(COMM, STREAM);
        d.call("cudaStreamSynchronize", args().handle(0, STREAM), 700);
        assertEquals(1, pendingOps(STREAM));
    }

    @Test
    void workEnqueuedWhileASynchronizeRunsStaysPending() {
        d.streamCreate(STREAM);
        d.allReduce(COMM, STREAM);
        FakeArgs sync = args().handle(0, STREAM);
        long token = d.enter("cudaStreamSynchronize", sync);
        d.allReduce(COMM, STREAM);
        d.exit("cudaStreamSynchronize", sync, 0, token);
        assertEquals(1, pendingOps(STREAM));
    }

    @Test
    void deviceSynchronizeCompletesTheStreamsOfItsDeviceOnly() {
        d.streamCreate(0x5000);
        d.setDevice(1);
        d.streamCreate(0x6000);
        d.eventCreate(0xE000);
        d.record(0xE000, 0x6000);
        d.setDevice(0);
        d.allReduce(COMM, 0x5000);
        d.setDevice(1);
        d.deviceSync();
        assertEquals(1, pendingOps(0x5000));
        assertEquals(0, pendingOps(0x6000));
        assertEquals(1, d.tracker.snapshot().events().size(),
                "per SPEC.md an event completes only by its own synchronize or query");
    }

    @Test
    void deviceSynchronizeLeavesWorkEnqueuedAfterItBeganPending() {
        d.streamCreate(STREAM);
        d.allReduce(COMM, STREAM);
        FakeArgs sync = args();
        long token = d.enter("cudaDeviceSynchronize", sync);
        d.allReduce(COMM, STREAM);
        d.exit("cudaDeviceSynchronize", sync, 0, token);
        assertEquals(2, pendingOps(STREAM), "which ops were before the synchronize is unknown: none is cleared");
    }

    @Test
    void failedDeviceSynchronizeCompletesNothing() {
        d.streamCreate(STREAM);
        d.allReduce(COMM, STREAM);
        d.call("cudaDeviceSynchronize", args(), 700);
        assertEquals(1, pendingOps(STREAM));
    }

    @Test
    void streamNeverCreatedUnderObservationBecomesKnownByItsFirstWork() {
        d.call("ncclBroadcast", args().handle(5, COMM).handle(6, 0x7000));
        HandleView s = unsynced().get(0);
        assertEquals(0x7000, s.handle());
        assertEquals("ncclBroadcast", s.api());
        assertEquals(Driver.BRIDGE, s.bridge());
        assertEquals(1L, s.details().get("pendingOps"));
    }

    @Test
    void legacyDefaultStreamAndCudaStreamLegacyAreOneStream() {
        d.allReduce(COMM, 0x0);
        d.allReduce(COMM, Streams.CUDA_STREAM_LEGACY);
        HandleView s = unsynced().get(0);
        assertEquals(1, unsynced().size());
        assertEquals("0x0", s.hexHandle());
        assertEquals(2L, s.details().get("pendingOps"));
        d.streamSync(Streams.CUDA_STREAM_LEGACY);
        assertTrue(unsynced().isEmpty());
    }

    @Test
    void legacyDefaultStreamIsOnePerDevice() {
        d.call("ncclCommInitAll", args().outs(0, 0xB000, 0xC000).i(1, 2));
        d.allReduce(0xC000, 0x0); // the comm of device 1: its device's legacy stream
        d.streamSync(0x0);        // this thread is on device 0
        assertEquals(1, pendingOps(0x0));
        assertEquals(1, unsynced().get(0).details().get("device"));
        d.setDevice(1);
        d.streamSync(0x0);
        assertTrue(unsynced().isEmpty());
    }

    @Test
    void perThreadDefaultStreamIsOnePerThread() throws Exception {
        Thread worker = new Thread(() -> d.allReduce(COMM, Streams.CUDA_STREAM_PER_THREAD));
        worker.start();
        worker.join();
        d.allReduce(COMM, Streams.CUDA_STREAM_PER_THREAD);
        d.streamSync(Streams.CUDA_STREAM_PER_THREAD);
        assertEquals(1, unsynced().size());
        assertEquals(1L, unsynced().get(0).details().get("pendingOps"));
        assertEquals("0x2", unsynced().get(0).hexHandle());
    }

    @Test
    void streamWaitEventCountsAsWorkOnTheStream() {
        d.streamCreate(STREAM);
        d.eventCreate(0xE000);
        d.call("cudaStreamWaitEvent", args().handle(0, STREAM).handle(1, 0xE000).i(2, 0));
        assertEquals(1, pendingOps(STREAM));
    }

    @Test
    void destroyEndsTrackingEvenWithPendingWork() {
        d.streamCreate(STREAM);
        d.allReduce(COMM, STREAM);
        d.streamDestroy(STREAM);
        assertTrue(unsynced().isEmpty());
        assertEquals(0, d.tracker.snapshot().liveStreams());
    }

    @Test
    void destroyRacingWithReuseOfItsAddressEndsOnlyTheStreamItSaw() {
        d.streamCreate(STREAM);
        FakeArgs destroy = args().handle(0, STREAM);
        long token = d.enter("cudaStreamDestroy", destroy);
        d.call("cudaStreamCreateWithFlags", args().out(0, STREAM).i(1, 1));
        d.exit("cudaStreamDestroy", destroy, 0, token);
        d.allReduce(COMM, STREAM);
        assertEquals("cudaStreamCreateWithFlags", unsynced().get(0).api());
    }

    @Test
    void aSynchronizeThatBeganOnAReleasedStreamDoesNotCompleteItsSuccessor() {
        d.streamCreate(STREAM);
        d.allReduce(COMM, STREAM);
        FakeArgs sync = args().handle(0, STREAM);
        long token = d.enter("cudaStreamSynchronize", sync);
        d.streamDestroy(STREAM);
        d.streamCreate(STREAM);
        d.allReduce(COMM, STREAM);
        d.allReduce(COMM, STREAM);
        d.exit("cudaStreamSynchronize", sync, 0, token);
        assertEquals(2, pendingOps(STREAM));
    }

    @Test
    void workOnAStreamCountsWhateverCommunicatorItUses() {
        d.streamCreate(STREAM);
        d.call("ncclAllGather", args().handle(4, COMM).handle(5, STREAM));
        d.call("ncclReduceScatter", args().handle(5, COMM).handle(6, STREAM));
        d.call("ncclReduce", args().handle(6, COMM).handle(7, STREAM));
        d.call("ncclRecv", args().handle(4, 0xDEAD).handle(5, STREAM));
        assertEquals(4, pendingOps(STREAM));
    }

    @Test
    void groupedWorkIsCountedWhenTheOutermostGroupEnds() {
        d.streamCreate(STREAM);
        d.call("ncclGroupStart", args());
        d.call("ncclGroupStart", args());
        d.allReduce(COMM, STREAM);
        d.call("ncclGroupEnd", args());
        assertEquals(0, pendingOps(STREAM), "nothing is launched before the outermost end");
        d.call("ncclGroupEnd", args());
        assertEquals(1, pendingOps(STREAM));
    }

    @Test
    void anEventRecordedInsideAGroupComesBeforeTheGroupsWork() {
        d.streamCreate(STREAM);
        d.eventCreate(0xE000);
        d.call("ncclGroupStart", args());
        d.allReduce(COMM, STREAM);
        d.record(0xE000, STREAM);
        d.call("ncclGroupEnd", args());
        d.eventSync(0xE000);
        assertEquals(1, pendingOps(STREAM), "the all-reduce was launched after the record");
    }

    @Test
    void failedGroupEndLaunchedNothing() {
        d.streamCreate(STREAM);
        d.call("ncclGroupStart", args());
        d.allReduce(COMM, STREAM);
        d.call("ncclGroupEnd", args(), 5);
        assertEquals(0, pendingOps(STREAM));
        d.allReduce(COMM, STREAM);
        assertEquals(1, pendingOps(STREAM), "the failed end closed the group");
    }

    @Test
    void nonblockingGroupEndInProgressLaunchedTheWork() {
        d.streamCreate(STREAM);
        d.call("ncclGroupStart", args());
        d.allReduce(COMM, STREAM);
        d.call("ncclGroupEnd", args(), Status.NCCL_IN_PROGRESS);
        assertEquals(1, pendingOps(STREAM));
    }

    @Test
    void aGroupIsPerThread() throws Exception {
        d.streamCreate(STREAM);
        d.call("ncclGroupStart", args());
        Thread other = new Thread(() -> d.allReduce(COMM, STREAM));
        other.start();
        other.join();
        assertEquals(1, pendingOps(STREAM));
    }
}
