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
 * index for index) and the thread's name. A stack whose first creation took no upcall (a new
 * stack under a JNI method whose creations Java held before) is named from the depot's frames
 * when its first event is adopted. Bounded by the native depot (its stack-depot option).
 */
final class NativeCreations {
    /** Longs per adopted event (ncclguard_test.h's NCCLGUARD_ADOPT_LONGS). */
    static final int ADOPT_LONGS = 8;
    /** The stack of an id whose first record had none (stacks=off). */
    private static final Object NO_STACK = new Object();
    private static final String BRIDGE = "native";

    private final Tracker tracker;
    /** Replaced whole by {@link #forgetStacks}: a lookup under way puts into the map it started with. */
    private volatile ConcurrentHashMap<Integer, Object> stacks = new ConcurrentHashMap<>();
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

    /** The stack learned for depot id {@code id} (a record's Throwable, or one named from the depot), or null. */
    Throwable learnedStack(int id) {
        return id != 0 && stacks.get(id) instanceof Throwable t ? t : null;
    }

    /**
     * The stacks learned so far are dropped: classes are about to be redefined, and a depot id
     * (methods and bytecode indexes) may read other lines afterwards. Later events of an id are
     * named from the depot's frames as the classes are then.
     */
    void forgetStacks() {
        stacks = new ConcurrentHashMap<>();
    }

    boolean any() {
        return any;
    }

    /** Takes over every such event alive now; none alive (the native count says so), no scan of the slots. */
    void adoptAll(Streams work, NativeSlots slots) {
        if (!any || slots == null || slots.unadoptedEvents() <= 0) {
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

    /**
     * The stack of depot id {@code id}: the Throwable of its first record, or, for a stack no
     * creation took the upcall at (a new stack under a JNI method Java knew), its frames as the
     * native depot names them, made once.
     */
    private Object stackOf(int id, NativeSlots slots) {
        ConcurrentHashMap<Integer, Object> stacks = this.stacks;
        Object stack = stacks.get(id);
        if (stack != null || id == 0) {
            return stack;
        }
        if (!tracker.stacksOn()) {
            return NO_STACK;
        }
        StackTraceElement[] frames = slots.stackOf(id);
        if (frames == null) {
            return null;
        }
        NamedStack named = new NamedStack(frames);
        Object known = stacks.putIfAbsent(id, named);
        return known != null ? known : named;
    }

    /** A creating stack named from the native depot's frames: those frames, no walk of its own. */
    static final class NamedStack extends Throwable {
        private static final long serialVersionUID = 1L;

        NamedStack(StackTraceElement[] frames) {
            super("creation stack", null, false, true);
            setStackTrace(frames);
        }

        @Override
        public synchronized Throwable fillInStackTrace() {
            return this; // the frames are the depot's, set above
        }
    }

    private EventRecord adopt(Streams work, NativeSlots slots, long[] a, int at) {
        int slot = (int) a[at];
        long handle = a[at + 1];
        int fn = (int) a[at + 2];
        Object stack = stackOf((int) a[at + 3], slots);
        String thread = threads.getOrDefault((int) a[at + 4], "?");
        NativeFunction f = fn >= 0 && fn < Catalog.size() ? Catalog.all().get(fn) : null;
        EventRecord e = new EventRecord(handle, tracker.nextSerial(), f == null ? "?" : f.symbol(), BRIDGE, thread,
                a[at + 5], stack instanceof Throwable t ? t : null, (int) a[at + 7], slots.access(a[at + 6]));
        e.nativeSlot = slot;
        work.adopted(e);
        return e;
    }
}
