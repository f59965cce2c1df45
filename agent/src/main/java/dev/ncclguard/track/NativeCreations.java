package dev.ncclguard.track;

import dev.ncclguard.catalog.Catalog;
import dev.ncclguard.catalog.NativeFunction;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Events native code created on Java threads that never reached Java at their creation: the native
 * part takes such a creation's Java stack without a JVM transition (AsyncGetCallTrace), finds it in
 * its depot of stacks, and when the tracker already knows that stack (an earlier creation there
 * took the upcall and held its record) keeps the event in a C slot alone, with the stack's id, the
 * thread's id, its time and call site (docs/design.md, "Creations at hot-call cost"). Its release
 * makes no upcall either. The tracker takes such events over (adopts them: a record as the upcall
 * would have made, the first creation's stack) when it looks at its events: a snapshot, the gauges,
 * a Java call on the handle. So reports, dumps and suppressions see what they saw before.
 *
 * <p>What the tracker learned at the first creation of a stack is kept per id: the creating
 * stack (the Throwable of that first record: the same frames, method for method and bytecode
 * index for index) and the thread's name. Bounded by the native depot (its stack-depot option).
 */
final class NativeCreations {
    /** Longs per adopted event (ncclguard_test.h's NCCLGUARD_ADOPT_LONGS). */
    static final int ADOPT_LONGS = 8;
    /** The stack of an id whose first record had none (stacks=off). */
    private static final Object NO_STACK = new Object();
    private static final String BRIDGE = "native";

    private final Tracker tracker;
    private final ConcurrentHashMap<Integer, Object> stacks = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<Integer, String> threads = new ConcurrentHashMap<>();
    /** Set at the first stack learned: before it, no event can have been made without an upcall. */
    private volatile boolean any;

    NativeCreations(Tracker tracker) {
        this.tracker = tracker;
    }

    /** The first creation of a stack on a thread took the upcall and its record is {@code record}. */
    void learned(int stack, int thread, Tracked record) {
        if (stack != 0) {
            stacks.putIfAbsent(stack, record.creation != null ? record.creation : NO_STACK);
        }
        if (thread != 0) {
            threads.put(thread, record.thread);
        }
        any = true;
    }

    boolean any() {
        return any;
    }

    /** Takes over every such event alive now. */
    void adoptAll(Streams work, NativeSlots slots) {
        if (!any || slots == null) {
            return;
        }
        long[] out = new long[ADOPT_LONGS * 1024];
        int n;
        do {
            n = slots.adoptEvents(out);
            for (int i = 0; i < n; i++) {
                adopt(work, slots, out, i * ADOPT_LONGS);
            }
        } while (n == out.length / ADOPT_LONGS);
    }

    /** Takes over the event {@code handle} if it is such an event; its record, or null. */
    EventRecord adoptOne(Streams work, NativeSlots slots, long handle) {
        if (!any || slots == null) {
            return null;
        }
        long[] out = new long[ADOPT_LONGS];
        return slots.adoptEvent(handle, out) == 1 ? adopt(work, slots, out, 0) : null;
    }

    private EventRecord adopt(Streams work, NativeSlots slots, long[] a, int at) {
        int slot = (int) a[at];
        long handle = a[at + 1];
        int fn = (int) a[at + 2];
        Object stack = stacks.get((int) a[at + 3]);
        String thread = threads.getOrDefault((int) a[at + 4], "?");
        NativeFunction f = fn >= 0 && fn < Catalog.size() ? Catalog.all().get(fn) : null;
        EventRecord e = new EventRecord(handle, tracker.nextSerial(), f == null ? "?" : f.symbol(), BRIDGE, thread,
                a[at + 5], stack instanceof Throwable t ? t : null, (int) a[at + 7], slots.access(a[at + 6]));
        e.nativeSlot = slot;
        work.adopted(e);
        return e;
    }
}
