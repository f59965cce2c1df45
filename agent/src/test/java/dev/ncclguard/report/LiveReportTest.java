package dev.ncclguard.report;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ncclguard.catalog.Catalog;
import dev.ncclguard.config.Suppressions;
import dev.ncclguard.track.Tracker;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The live view behind dev.ncclguard.bootstrap.Live: leak ids now, and their text. */
class LiveReportTest {
    private final Tracker tracker = new Tracker();

    private void createEvent(long handle) {
        tracker.exit(Catalog.lookup("cudaEventCreate"), new OutArgs(handle), 0, 0, "test", null);
    }

    private void createStream(long handle) {
        tracker.exit(Catalog.lookup("cudaStreamCreate"), new OutArgs(handle), 0, 0, "test", null);
    }

    private void record(long event, long stream) {
        var fn = Catalog.lookup("cudaEventRecord");
        OutArgs args = new OutArgs(0).handles(event, stream);
        tracker.exit(fn, args, 0, tracker.enter(fn, args), "test", null);
    }

    /** Arguments of a call: handles by value at 0 and 1, or one handle written to out-parameter 0. */
    private static final class OutArgs implements dev.ncclguard.track.CallArgs {
        private final long out;
        private long first;
        private long second;

        OutArgs(long out) {
            this.out = out;
        }

        OutArgs handles(long a, long b) {
            first = a;
            second = b;
            return this;
        }

        @Override
        public long handle(int index) {
            return index == 0 ? first : second;
        }

        @Override
        public long handleOut(int index) {
            return out;
        }

        @Override
        public long handleOut(int index, int i) {
            return 0;
        }

        @Override
        public int intArg(int index) {
            return 0;
        }

        @Override
        public int intArray(int index, int i, int fallback) {
            return fallback;
        }

        @Override
        public byte[] bytes(int index, int length) {
            return null;
        }
    }

    @Test
    void idsNameEachCurrentLeakAndStayTheSameWhileItLasts() {
        LiveReport live = new LiveReport(tracker, Suppressions.NONE);
        assertEquals(List.of(), live.leakIds());
        createStream(0x100);
        createEvent(0x200);
        record(0x200, 0x100);

        List<String> ids = live.leakIds();
        assertEquals(2, ids.size(), ids.toString());
        assertEquals(ids, live.leakIds());
        assertTrue(ids.get(0).startsWith("event:0x200:"), ids.toString());
        assertTrue(ids.get(1).startsWith("stream:0x100:"), ids.toString());
    }

    @Test
    void describePrintsTheChosenLeaksAsTheReportDoes() {
        LiveReport live = new LiveReport(tracker, Suppressions.NONE);
        createStream(0x100);
        createEvent(0x200);
        record(0x200, 0x100);
        String event = live.leakIds().get(0);

        String text = live.describe(List.of(event));
        assertTrue(text.startsWith("Pending event 0x200 (device 0, recorded on stream 0x100): created by cudaEventCreate,"),
                text);
        assertTrue(text.contains("What to do: synchronize it (cudaEventSynchronize) before exit."), text);
        assertFalse(text.contains("Unsynchronized stream"), text);
        assertEquals("", live.describe(List.of("event:0x999:0:1")));
    }

    @Test
    void suppressedLeaksHaveNoId() {
        LiveReport live = new LiveReport(tracker, Suppressions.of("t",
                // this class's own frames are hidden as the agent's (dev.ncclguard.report): match JUnit's
                Suppressions.parse(List.of("event:org.junit."))));
        createStream(0x100);
        createEvent(0x200);
        record(0x200, 0x100);
        List<String> ids = live.leakIds();
        assertEquals(1, ids.size(), ids.toString());
        assertTrue(ids.get(0).startsWith("stream:"));
    }
}
