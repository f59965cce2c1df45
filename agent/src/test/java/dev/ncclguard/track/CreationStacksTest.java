package dev.ncclguard.track;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ncclguard.bridge.CallProtocol;
import dev.ncclguard.catalog.Catalog;
import dev.ncclguard.catalog.NativeFunction;
import dev.ncclguard.report.StackFrames;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
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
    void aNativeCreationAtALearnedDepotIdTakesThatIdsStackInPlaceOfAWalk() {
        Tracker t = new Tracker();
        Driver d = new Driver(t);
        d.eventCreate(0xE001);
        t.nativeStackLearned(0xE001, 42, 0); // the native part's first creation at depot id 42
        Throwable learned = t.learnedNativeStack(42);
        assertTrue(learned != null);
        assertNull(t.learnedNativeStack(43));
        assertNull(t.learnedNativeStack(0));
        // a later creation at id 42 (on a virtual thread, say): its record gets that stack, not one
        // of the frames it was told from (a walk here would read this method's later line)
        CallProtocol calls = new CallProtocol(t, Driver.BRIDGE, false);
        FakeArgs a = FakeArgs.args().out(0, 0xE002);
        NativeFunction create = Driver.fn("cudaEventCreate");
        calls.exit(create, a, 0, calls.enter(create, a), Driver.BRIDGE, FakeArgs.ACCESS, learned);
        FakeArgs b = FakeArgs.args().out(0, 0xE003);
        calls.exit(create, b, 0, calls.enter(create, b), Driver.BRIDGE, FakeArgs.ACCESS, null);
        d.record(0xE002, 0x5000);
        d.record(0xE003, 0x5000);
        Throwable second = null;
        Throwable walked = null;
        for (HandleView e : d.tracker.snapshot().events()) {
            if (e.handle() == 0xE002) {
                second = e.creation();
            } else if (e.handle() == 0xE003) {
                walked = e.creation();
            }
        }
        assertArrayEquals(learned.getStackTrace(), second.getStackTrace());
        assertFalse(Arrays.equals(learned.getStackTrace(), walked.getStackTrace()));
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

    @Test
    void tenMillionCreateDestroyPairsAtThreePlacesKeepTheDepotAtThreeStacks() {
        Driver d = new Driver(new Tracker());
        for (int i = 0; i < 10_000_000; i++) {
            long h = 0xE000 + (i & 7);
            switch (i % 3) {
                case 0 -> d.eventCreate(h);
                case 1 -> d.eventCreate(h);
                default -> d.eventCreate(h);
            }
            d.eventDestroy(h);
            if (i % 1_000_000 == 999_999) {
                // an entry per place, and one more at most per place whose stack the GC collected and
                // the reference handler has not queued yet: nothing per ended handle
                assertTrue(d.tracker.creationStacks().size() <= 6, "depot at " + i + ": "
                        + d.tracker.creationStacks().size());
            }
        }
        assertEquals(0, d.tracker.snapshot().events().size());
    }

    @Test
    void pastTheStackDepotANewStackIsNotKeptAndOneLineSaysSo() {
        Driver d = new Driver(new Tracker());
        d.tracker.stackDepot(5);
        d.streamCreate(0x5000); // the stream the events are recorded on: one stack of the five
        String log = stderrOf(() -> {
            for (int i = 0; i < 7; i++) {
                createAtDepth(d, 0xE000 + i, i < 6 ? i : 2); // the last at a stack already kept
                d.record(0xE000 + i, 0x5000);
            }
        });
        List<HandleView> events = sortedByHandle(d.tracker.snapshot().events());
        int base = events.get(0).creation().getStackTrace().length;
        for (int i = 0; i < 4; i++) {
            assertFalse(events.get(i).creation() instanceof StackNotKept);
            assertEquals(base + i, events.get(i).creation().getStackTrace().length); // its own depth
        }
        assertSame(events.get(2).creation(), events.get(6).creation()); // still shared at the bound
        for (int i = 4; i < 6; i++) {
            assertEquals(List.of("... not kept: 5 distinct creating stacks were live (stack-depot)"),
                    StackFrames.format(events.get(i).creation()));
        }
        assertEquals(2, d.tracker.creationStacks().notKeptCount());
        assertEquals(1, log.split("stack-depot=5 distinct creating stacks", -1).length - 1, log);
    }

    @Test
    void aStackDepotOfZeroKeepsEveryStack() {
        Driver d = new Driver(new Tracker());
        d.tracker.stackDepot(0); // as the native part's: no bound (there, no depot)
        for (int i = 0; i < 20; i++) {
            createAtDepth(d, 0xE000 + i, i);
        }
        assertEquals(Integer.MAX_VALUE, d.tracker.creationStacks().max());
        assertEquals(20, d.tracker.creationStacks().size());
        assertEquals(0, d.tracker.creationStacks().notKeptCount());
    }

    @Test
    void stacksOfReleasedHandlesMakeRoomAtTheBound() {
        Driver d = new Driver(new Tracker());
        d.tracker.stackDepot(5);
        d.streamCreate(0x5000); // the stream the events are recorded on: one stack of the five
        List<Throwable> kept = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            createAtDepth(d, 0xE000 + i, i);
            d.record(0xE000 + i, 0x5000);
            kept.add(viewOf(d, 0xE000 + i).creation()); // held here: a sweep finds them unreleased, not collected
        }
        for (int i = 0; i < 4; i++) {
            d.eventDestroy(0xE000 + i);
        }
        createAtDepth(d, 0xE010, 7);
        d.record(0xE010, 0x5000);
        Throwable seventh = viewOf(d, 0xE010).creation();
        assertFalse(seventh instanceof StackNotKept);
        assertEquals(0, d.tracker.creationStacks().notKeptCount());
        assertEquals(2, d.tracker.creationStacks().size()); // the stream's and the new event's
        assertEquals(4, kept.size());
    }

    @Test
    void aKeptStackReadsAsTheHandlesOwnCapture() {
        Driver d = new Driver(new Tracker());
        for (int i = 0; i < 4; i++) {
            createAtDepth(d, i < 3 ? 0xE000 + i : 0xE010, i < 3 ? 3 : 4);
            d.record(i < 3 ? 0xE000 + i : 0xE010, 0x5000);
        }
        List<StackTraceElement> three = Arrays.asList(viewOf(d, 0xE000).creation().getStackTrace());
        List<StackTraceElement> four = Arrays.asList(viewOf(d, 0xE010).creation().getStackTrace());
        assertSame(viewOf(d, 0xE000).creation(), viewOf(d, 0xE002).creation());
        // the new stack is its own: one frame of createAtDepth more, the rest the same
        assertEquals(three.size() + 1, four.size());
        int top = 0;
        while (!three.get(top).getMethodName().equals("createAtDepth")) {
            top++;
        }
        assertEquals(three.subList(0, top + 1), four.subList(0, top + 1)); // the agent's and the leaf
        assertEquals(three.subList(top + 1, three.size()), four.subList(top + 2, four.size()));
    }

    private static void createAtDepth(Driver d, long handle, int depth) {
        if (depth == 0) {
            d.eventCreate(handle);
        } else {
            createAtDepth(d, handle, depth - 1);
        }
    }

    private static HandleView viewOf(Driver d, long handle) {
        for (HandleView v : d.tracker.snapshot().events()) {
            if (v.handle() == handle) {
                return v;
            }
        }
        throw new AssertionError("no event " + Long.toHexString(handle));
    }

    private static List<HandleView> sortedByHandle(List<HandleView> views) {
        List<HandleView> sorted = new ArrayList<>(views);
        sorted.sort((a, b) -> Long.compare(a.handle(), b.handle()));
        return sorted;
    }

    private static String stderrOf(Runnable body) {
        PrintStream err = System.err;
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        System.setErr(new PrintStream(out, true, StandardCharsets.UTF_8));
        try {
            body.run();
        } finally {
            System.setErr(err);
        }
        return out.toString(StandardCharsets.UTF_8);
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
