package dev.ncclguard.track;

import static dev.ncclguard.track.FakeArgs.args;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import dev.ncclguard.catalog.Catalog;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class TrackerListenerTest {
    private final Tracker tracker = new Tracker();
    private final Driver d = new Driver(tracker);
    private final List<String> heard = new ArrayList<>();

    {
        tracker.listener(new TrackerListener() {
            @Override
            public void communicatorCreated(long handle, String api, String bridge, int rank, int nranks, int device,
                    String commId) {
                heard.add("comm+ 0x" + Long.toHexString(handle) + " " + api + " " + rank + "/" + nranks + " "
                        + (commId == null ? "-" : "id"));
            }

            @Override
            public void communicatorReleased(long handle, String api, String bridge) {
                heard.add("comm- 0x" + Long.toHexString(handle) + " " + api);
            }

            @Override
            public void eventCreated(long handle) {
                heard.add("event+ 0x" + Long.toHexString(handle));
            }

            @Override
            public void eventDestroyed(long handle) {
                heard.add("event- 0x" + Long.toHexString(handle));
            }

            @Override
            public void streamCreated(long handle) {
                heard.add("stream+ 0x" + Long.toHexString(handle));
            }

            @Override
            public void streamDestroyed(long handle) {
                heard.add("stream- 0x" + Long.toHexString(handle));
            }

            @Override
            public void firstCall() {
                heard.add("first");
            }
        });
    }

    @Test
    void hearsEachCreationAndReleaseOfAKnownHandleOnce() {
        d.initRank(0x10, 2, 0, new byte[Catalog.UNIQUE_ID_BYTES]);
        d.split(0x10, 0, 0, 0x11);
        d.eventCreate(0x20);
        d.call("cudaStreamCreate", args().out(0, 0x30));
        d.destroy(0x11);
        d.destroy(0x11); // already released
        d.destroy(0x99); // never seen: created before the tracker started
        d.call("cudaEventDestroy", args().handle(0, 0x20));
        d.call("cudaStreamDestroy", args().handle(0, 0x30));

        assertEquals(List.of("first", "comm+ 0x10 ncclCommInitRank 0/2 id", "comm+ 0x11 ncclCommSplit -1/-1 id",
                "event+ 0x20", "stream+ 0x30", "comm- 0x11 ncclCommDestroy", "event- 0x20", "stream- 0x30"), heard);
    }

    @Test
    void failedCallsAreNotHeard() {
        d.call("ncclCommInitRank", args().out(0, 0x10).i(1, 2).i(3, 0), 3);
        d.call("cudaEventCreate", args().out(0, 0x20), 2);
        assertEquals(List.of("first"), heard);
    }

    @Test
    void aListenerThatThrowsCostsTheTrackerNothing() {
        tracker.listener(new TrackerListener() {
            @Override
            public void communicatorCreated(long handle, String api, String bridge, int rank, int nranks, int device,
                    String commId) {
                throw new IllegalStateException("listener failed");
            }
        });
        d.initRank(0x10, 2, 0, new byte[Catalog.UNIQUE_ID_BYTES]);
        Snapshot s = tracker.snapshot();
        assertEquals(1, s.liveComms());
        assertEquals(1, s.internalErrors());
    }

    @Test
    void stacksCanBeTurnedOffWhileRunning() {
        d.eventCreate(0x20);
        tracker.stacks(false);
        d.eventCreate(0x21);
        d.record(0x20, 0x30);
        d.record(0x21, 0x30);
        List<HandleView> events = tracker.snapshot().events();
        assertEquals(2, events.size());
        assertEquals(0x20, events.get(0).handle());
        assertNull(events.get(1).creation());
    }
}
