package dev.ncclguard.track;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** The map's lock-free lookups against writers that insert, delete and resize at the same time. */
class LongMapTest {
    private static EventRecord record(long handle, long serial) {
        return new EventRecord(handle, serial, "cudaEventCreate", "test", "main", 0, null, 0, null);
    }

    @Test
    void putGetAndRemoveBySerial() {
        LongMap<EventRecord> map = new LongMap<>();
        EventRecord first = record(0x1000, 1);
        assertNull(map.put(0x1000, first));
        assertSame(first, map.get(0x1000));
        assertNull(map.removeIfSerial(0x1000, 2), "another record's serial ends nothing");
        assertSame(first, map.removeIfSerial(0x1000, 1));
        assertNull(map.get(0x1000));
        assertEquals(0, map.size());
    }

    @Test
    void aRecordThatLeftTheMapIsNotFoundAgainThroughTheRecentRecords() {
        LongMap<EventRecord> map = new LongMap<>();
        EventRecord first = record(0x2000, 1);
        map.put(0x2000, first);
        assertSame(first, map.get(0x2000));
        EventRecord second = record(0x2000, 2);
        assertSame(first, map.put(0x2000, second));
        assertTrue(first.ended());
        assertSame(second, map.get(0x2000));
        // a record kept under another key than its handle (a special stream) is found by its key only
        EventRecord keyed = record(0x0, 3);
        map.put(0x8000_0000_0000_0001L, keyed);
        assertSame(keyed, map.get(0x8000_0000_0000_0001L));
        assertSame(keyed, map.get(0x8000_0000_0000_0001L));
        assertNull(map.get(0x0));
    }

    @Test
    void lookupsWithoutLockNeverMissOrMistakeAStableKeyWhileWritersChurn() throws InterruptedException {
        LongMap<EventRecord> map = new LongMap<>();
        int stable = 2_000;
        EventRecord[] records = new EventRecord[stable];
        for (int i = 0; i < stable; i++) {
            records[i] = record(0x10_0000L + i * 0x100L, i + 1);
            map.put(records[i].handle, records[i]);
        }
        AtomicBoolean stop = new AtomicBoolean();
        AtomicReference<String> failure = new AtomicReference<>();
        List<Thread> threads = new ArrayList<>();
        for (int w = 0; w < 2; w++) {
            long base = 0x7000_0000_0000L + w * 0x1000_0000_0000L;
            // grows every stripe well past its size, then empties it (shrinks), over and over
            threads.add(new Thread(() -> {
                long serial = 1_000_000;
                while (!stop.get()) {
                    for (int i = 0; i < 20_000; i++) {
                        map.put(base + i * 0x40L, record(base + i * 0x40L, ++serial));
                    }
                    for (int i = 0; i < 20_000; i++) {
                        EventRecord r = map.get(base + i * 0x40L);
                        map.removeIfSerial(base + i * 0x40L, r.serial);
                    }
                }
            }));
        }
        for (int r = 0; r < 2; r++) {
            threads.add(new Thread(() -> {
                while (!stop.get()) {
                    for (EventRecord expected : records) {
                        EventRecord found = map.get(expected.handle);
                        if (found != expected) {
                            failure.compareAndSet(null, "0x" + Long.toHexString(expected.handle) + ": " + found);
                        }
                    }
                    if (map.get(0x42) != null) {
                        failure.compareAndSet(null, "found an absent key");
                    }
                }
            }));
        }
        threads.forEach(Thread::start);
        Thread.sleep(1_500);
        stop.set(true);
        for (Thread t : threads) {
            t.join();
        }
        assertNull(failure.get());
        assertEquals(stable, map.size());
    }
}
