package dev.ncclguard.track;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ncclguard.catalog.Catalog;
import java.lang.ref.WeakReference;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

class CreationStacksTest {
    private final CreationStacks stacks = new CreationStacks();

    @Test
    void backtracesAreReadableWithTheExportTheAgentMakes() {
        // surefire exports jdk.internal.misc as the agent does at start; without it nothing is shared
        assertTrue(Backtraces.READABLE);
    }

    @Test
    void eventsCreatedInOneLoopShareOneCreationStack() {
        Driver d = new Driver(new Tracker());
        for (int i = 0; i < 100; i++) {
            d.eventCreate(0xE000 + i);
            d.record(0xE000 + i, 0x5000); // an event is reported once recorded
        }
        List<HandleView> events = d.tracker.snapshot().events();
        assertEquals(100, events.size());
        for (HandleView e : events) {
            assertSame(events.get(0).creation(), e.creation());
        }
    }

    @Test
    void communicatorsKeepTheirOwnStacks() {
        Driver d = new Driver(new Tracker());
        for (int i = 0; i < 2; i++) {
            d.initRank(0xA000 + i, 1, 0, new byte[Catalog.UNIQUE_ID_BYTES]);
        }
        List<HandleView> comms = d.tracker.snapshot().comms();
        assertNotSame(comms.get(0).creation(), comms.get(1).creation());
        assertArrayEquals(comms.get(0).creation().getStackTrace(), comms.get(1).creation().getStackTrace());
    }

    @Test
    void handlesCreatedAtTwoPlacesKeepTwoStacks() {
        Driver d = new Driver(new Tracker());
        d.eventCreate(0xE001);
        d.eventCreate(0xE002);
        d.record(0xE001, 0x5000);
        d.record(0xE002, 0x5000);
        List<HandleView> events = d.tracker.snapshot().events();
        assertNotSame(events.get(0).creation(), events.get(1).creation());
        assertFalse(Arrays.equals(events.get(0).creation().getStackTrace(), events.get(1).creation().getStackTrace()));
    }

    @Test
    void aSharedStackReadsAsTheOneItReplaces() {
        List<Throwable> fresh = new ArrayList<>();
        List<Throwable> shared = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            Throwable t = new Throwable("creation stack");
            fresh.add(t);
            shared.add(stacks.share(t));
        }
        assertSame(fresh.get(0), shared.get(0));
        assertSame(fresh.get(0), shared.get(1));
        assertSame(fresh.get(0), shared.get(2));
        assertArrayEquals(fresh.get(1).getStackTrace(), shared.get(1).getStackTrace());
    }

    @Test
    void onlyTheSameFramesAndBytecodeIndexesShare() {
        // one line, two calls: the same frames but for the caller's bytecode index
        Throwable a = capture(); Throwable b = capture();
        assertSame(a, stacks.share(a));
        assertSame(b, stacks.share(b)); // not a's
        assertEquals(a.getStackTrace()[1].getLineNumber(), b.getStackTrace()[1].getLineNumber());
    }

    @Test
    void deepStacksShareWhenAllTheirChunksMatch() {
        // the VM keeps a backtrace in chunks of 32 frames: these differ only below the first chunk
        Throwable[] atDepth = new Throwable[3];
        for (int i = 0; i < atDepth.length; i++) {
            atDepth[i] = nested(i < 2 ? 70 : 71);
        }
        assertTrue(atDepth[0].getStackTrace().length > 64);
        assertSame(atDepth[0], stacks.share(atDepth[0]));
        assertSame(atDepth[0], stacks.share(atDepth[1]));
        assertSame(atDepth[2], stacks.share(atDepth[2]));
    }

    @Test
    void aStackNoHandleHoldsCanBeCollected() throws InterruptedException {
        WeakReference<Throwable> gone = shareAndDrop();
        for (int i = 0; i < 20 && gone.get() != null; i++) {
            System.gc();
            Thread.sleep(10);
        }
        assertNull(gone.get());
    }

    @Test
    void aStackCapturedAfterTheFirstWasCollectedIsKeptAsItIs() throws InterruptedException {
        WeakReference<Throwable> gone = shareAndDrop();
        for (int i = 0; i < 20 && gone.get() != null; i++) {
            System.gc();
            Thread.sleep(10);
        }
        Throwable again = sameLineCapture();
        assertSame(again, stacks.share(again));
    }

    private WeakReference<Throwable> shareAndDrop() {
        return new WeakReference<>(stacks.share(sameLineCapture()));
    }

    private static Throwable sameLineCapture() {
        return new Throwable("creation stack");
    }

    private static Throwable capture() {
        return new Throwable("creation stack");
    }

    private static Throwable nested(int depth) {
        return depth == 0 ? capture() : nested(depth - 1);
    }
}
