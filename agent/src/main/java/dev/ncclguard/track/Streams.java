package dev.ncclguard.track;

import dev.ncclguard.catalog.Catalog;
import dev.ncclguard.catalog.Change;
import dev.ncclguard.catalog.Effect;
import dev.ncclguard.catalog.NativeFunction;
import dev.ncclguard.catalog.Status;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The tracker's streams and events, and the work counted on the streams (see {@link StreamRecord}):
 * the numbers that order a call against concurrent work come from one global op sequence, which a
 * device synchronize steps and work on streams only reads (streams reserve their op numbers in it,
 * and threads their event record numbers, a block at a time). NCCL work called inside
 * ncclGroupStart/End counts at the outermost successful ncclGroupEnd, where NCCL launches it.
 */
final class Streams {
    /** cudaStreamLegacy and cudaStreamPerThread, the special handles of cuda_runtime_api.h. */
    static final long CUDA_STREAM_LEGACY = 0x1;
    static final long CUDA_STREAM_PER_THREAD = 0x2;
    // Map keys of the special streams, which are one stream per device (per thread and device for
    // cudaStreamPerThread). User-space addresses never set the top bit, so these cannot collide.
    private static final long LEGACY_STREAM_KEY = 0x8000_0000_0000_0000L;
    private static final long PER_THREAD_STREAM_KEY = 0xC000_0000_0000_0000L;
    /**
     * Keys of the special streams native code used, which C keeps per device and thread without
     * asking Java (bridge.interposer): one record per C slot, apart from Java's own records of the
     * same stream; a snapshot reports the two as one stream.
     */
    private static final long NATIVE_SPECIAL_STREAM_KEY = 0xA000_0000_0000_0000L;
    /** Slot ids of C stream slots carry this bit (native-shim/src/main/c/ng_track.h). */
    static final int STREAM_SLOT_BIT = 1 << 30;

    private final Tracker tracker;
    final LongMap<EventRecord> events = new LongMap<>();
    final LongMap<StreamRecord> streams = new LongMap<>();
    /** Threads inside ncclGroupStart/End now: while none is, enqueued work skips the thread-local. */
    private final AtomicInteger threadsInGroups = new AtomicInteger();
    private final AtomicLong opSeq = new AtomicLong();
    /** What work deferred to a group's end counts as in a C slot: one op, as a collective's. */
    private static final int GROUPED_WORK = Catalog.first(Effect.COMM_ENQUEUE).id();

    Streams(Tracker tracker) {
        this.tracker = tracker;
    }

    // --- what the calls of the hot path act on, found before the call ---

    EventRecord event(long handle) {
        EventRecord e = events.get(handle);
        return e != null ? e : tracker.adoptedEvent(handle);
    }

    /** An event native code made with no upcall, taken over ({@link NativeCreations}). */
    void adopted(EventRecord e) {
        releaseSlotOf(events.put(e.handle, e));
    }

    StreamRecord stream(long handle) {
        return streams.get(streamKey(handle));
    }

    /** A special stream's key is the communicator's device: left to the exit. */
    StreamRecord collectiveStream(long stream) {
        return isSpecialStream(stream) ? null : streams.get(stream);
    }

    // --- events ---

    void eventCreated(NativeFunction fn, CallArgs args, String bridge, NativeAccess access, Throwable stack) {
        long h = args.handleOut(fn.handle());
        if (h != 0) {
            EventRecord e = new EventRecord(h, tracker.nextSerial(), fn.symbol(), bridge, Tracker.threadName(),
                    tracker.now(), tracker.sharedStack(stack), tracker.currentDevice(), access);
            e.nativeSlot = args.nativeSlot();
            releaseSlotOf(events.put(h, e));
            tracker.listener().eventCreated(h);
        }
    }

    /** Before a cudaEventDestroy: the record's serial, or {@link Tracker#CLAIMED_BY_CLEANUP}. */
    long enterEventRelease(long handle) {
        return Tracked.releaseToken(event(handle));
    }

    /** After a cudaEventDestroy: a success ends the record {@code token} names, a failure leaves it live. */
    void eventReleased(long handle, int status, long token) {
        if (status != 0) {
            Tracked.releaseFailed(events.get(handle), token);
        } else {
            EventRecord e = events.removeIfSerial(handle, token);
            if (e != null) {
                releaseSlotOf(e);
                tracker.listener().eventDestroyed(handle);
            }
        }
    }

    /** A query or synchronize saw the event complete: its record as of the call's start ({@code token}). */
    static void eventCompleted(Object found, long token) {
        // a record released since it was found is no longer the handle's: its token covers nothing now
        if (found instanceof EventRecord e && !e.ended()) {
            e.completed(token);
        }
    }

    /** cudaEventRecord: one op on the stream, which the event's completion covers ({@code token}: the count at enter). */
    void recorded(NativeFunction fn, Object found, long event, long stream, long token, String bridge,
            NativeAccess access) {
        StreamRecord s = streamForWork(found, fn, event, stream, bridge, access);
        EventRecord e = event(event);
        if (s.nativeSlot >= 0) {
            // a C stream: the record is C's, and the event's state follows its stream there
            int slot = (int) slots().exit(fn.id(), s.nativeSlot, event, Status.CUDA_SUCCESS, token);
            if (e != null) {
                eventInSlot(e, slot);
            } else if (slot >= 0) {
                slots().release(slot);
            }
            return;
        }
        long op = s.enqueueRecord(opSeq.get(), token);
        if (e != null) {
            int old = e.nativeSlot;
            if (old >= 0) {
                // a C event recorded on a Java stream: its state is Java's from this record on
                e.nativeSlot = Tracked.NO_SLOT;
                slots().eventToJava(event);
                slots().release(old);
            }
            e.recorded(s, op, tracker.thread().recordNumber(opSeq));
        }
    }

    /** The event's state is in {@code slot} now (C's), or stays where it was for -1. */
    private void eventInSlot(EventRecord e, int slot) {
        int old = e.nativeSlot;
        if (slot < 0 || old == slot) {
            return;
        }
        e.nativeSlot = slot;
        if (old >= 0) {
            slots().release(old);
        }
    }

    /** A record left its map: the C slot it held, if any, may go once C is done with it too. */
    private void releaseSlotOf(Tracked t) {
        if (t != null && t.nativeSlot >= 0) {
            NativeSlots n = tracker.nativeSlots();
            if (n != null) {
                n.release(t.nativeSlot);
            }
        }
    }

    private NativeSlots slots() {
        return tracker.nativeSlots();
    }

    /**
     * Native work met a handle C keeps a slot for from now on (bridge.interposer's seen): a stream
     * first used there, which gets a record with that slot, or an event whose state moved to C
     * (recorded natively on a C stream). Returns whether a record holds the slot.
     */
    boolean seenByNative(NativeFunction fn, long handle, int device, int slot, String bridge, NativeAccess access) {
        if ((slot & STREAM_SLOT_BIT) == 0) {
            EventRecord e = events.get(handle);
            if (e == null) {
                return false;
            }
            eventInSlot(e, slot);
            return true;
        }
        boolean special = isSpecialStream(handle);
        long key = special ? NATIVE_SPECIAL_STREAM_KEY | slot : handle;
        StreamRecord fresh = new StreamRecord(handle, tracker.nextSerial(), fn.symbol(), bridge, Tracker.threadName(),
                tracker.now(), tracker.sharedStack(), device, access, opSeq);
        fresh.nativeSlot = slot;
        if (streams.putIfAbsent(key, fresh) != null) {
            return false; // a Java record came first: it keeps its own state
        }
        if (!special) {
            tracker.listener().streamCreated(handle);
        }
        return true;
    }

    /** Whether the tracker's record of {@code handle} holds C slot {@code slot} (after a creation's exit). */
    boolean holds(long handle, int slot) {
        Tracked t = (slot & STREAM_SLOT_BIT) != 0 ? streams.get(handle) : events.get(handle);
        return t != null && t.nativeSlot == slot;
    }

    // --- streams ---

    void streamCreated(NativeFunction fn, CallArgs args, String bridge, NativeAccess access, Throwable stack) {
        long h = args.handleOut(fn.handle());
        if (h != 0 && !isSpecialStream(h)) {
            StreamRecord s = new StreamRecord(h, tracker.nextSerial(), fn.symbol(), bridge, Tracker.threadName(),
                    tracker.now(), tracker.sharedStack(stack), tracker.currentDevice(), access, opSeq);
            s.nativeSlot = args.nativeSlot();
            releaseSlotOf(streams.put(h, s));
            tracker.listener().streamCreated(h);
        }
    }

    /** Before a cudaStreamDestroy: the serial of the record it would end. */
    long enterStreamRelease(long handle) {
        StreamRecord s = streams.get(streamKey(handle));
        return s == null ? 0 : s.serial;
    }

    void streamReleased(long handle, long token) {
        StreamRecord s = streams.removeIfSerial(streamKey(handle), token);
        if (s != null) {
            releaseSlotOf(s);
            tracker.listener().streamDestroyed(handle);
        }
    }

    /** A stream query or synchronize saw the stream idle: its ops up to the count at enter ({@code token}) are done. */
    static void streamCompleted(Object found, long token) {
        if (found instanceof StreamRecord s && !s.ended()) {
            s.markDone(token);
        }
    }

    /** A collective, send or recv: one op; inside a group, counted when the group launches it. */
    void collective(NativeFunction fn, Object found, long comm, long stream, String bridge, NativeAccess access) {
        StreamRecord s = streamForWork(found, fn, comm, stream, bridge, access);
        ThreadState thread;
        if (threadsInGroups.get() != 0 && (thread = tracker.thread()).groupDepth > 0) {
            thread.deferToGroupEnd(s);
        } else {
            enqueue(s, fn.id());
        }
    }

    /** cudaStreamWaitEvent: one op (a wait) on the stream. */
    void waited(NativeFunction fn, Object found, long handle, long stream, String bridge, NativeAccess access) {
        enqueue(streamForWork(found, fn, handle, stream, bridge, access), fn.id());
    }

    /** One op on {@code s}: counted by its record, or by C for a stream whose state is in a C slot. */
    private void enqueue(StreamRecord s, int fn) {
        if (s.nativeSlot >= 0) {
            slots().exit(fn, s.nativeSlot, 0, Status.CUDA_SUCCESS, 0);
        } else {
            s.enqueue(opSeq.get());
        }
    }

    // --- the device and groups ---

    /**
     * Before a device synchronize: work whose exit reads the sequence before this step was called
     * before. C's streams get a token of their own, kept for the exit on this thread.
     */
    long deviceSyncStarts(boolean forNative) {
        NativeSlots n = tracker.nativeSlots();
        if (forNative && n != null) {
            tracker.thread().nativeSyncToken = n.deviceSyncEnter(tracker.currentDevice());
        }
        return opSeq.incrementAndGet();
    }

    /** @param forNative C's streams too: a Java bridge's call, which C did not see */
    void deviceSynchronized(long token, boolean forNative) {
        int device = tracker.currentDevice();
        streams.forEach(s -> {
            if (s.device == device && s.nativeSlot < 0) {
                s.deviceSynchronized(token);
            }
        });
        NativeSlots n = tracker.nativeSlots();
        if (forNative && n != null) {
            n.deviceSyncExit(device, tracker.thread().nativeSyncToken);
        }
    }

    void groupOpened() {
        if (tracker.thread().groupDepth++ == 0) {
            threadsInGroups.incrementAndGet();
        }
    }

    /**
     * The outermost ncclGroupEnd launches the group's work, so it is counted now: an event
     * recorded inside the group comes before it on the stream. A failed end launched nothing.
     */
    void groupClosed(int status) {
        ThreadState thread = tracker.thread();
        if (thread.groupDepth == 0 || --thread.groupDepth > 0) {
            return;
        }
        threadsInGroups.decrementAndGet();
        if (Tracker.succeededOrInProgress(status)) {
            for (int i = 0; i < thread.groupedCount(); i++) {
                enqueue(thread.grouped(i), GROUPED_WORK);
            }
        }
        thread.clearGrouped();
    }

    // --- stream identity ---

    /**
     * The stream work goes to; a stream not created under observation (the special streams, or
     * one created before the agent came) becomes known here, with the enqueuing call as its api.
     */
    private StreamRecord streamForWork(Object found, NativeFunction fn, long handle, long stream, String bridge,
            NativeAccess access) {
        // found before the call and still the stream's record: what the lookup below would find.
        // Not read: it was current when the bridge asked, so it ended since, as after a lookup.
        if (found instanceof StreamRecord s && (!s.ended() || stream == Tracker.NOT_READ)) {
            return s;
        }
        boolean special = isSpecialStream(stream);
        int device = special ? workDevice(fn, handle) : 0;
        long key = special ? specialStreamKey(stream, device) : stream;
        StreamRecord s = streams.get(key);
        if (s != null) {
            return s;
        }
        if (!special) {
            device = workDevice(fn, handle);
        }
        StreamRecord fresh = new StreamRecord(stream, tracker.nextSerial(), fn.symbol(), bridge,
                Tracker.threadName(), tracker.now(), tracker.sharedStack(), device, access, opSeq);
        StreamRecord raced = streams.putIfAbsent(key, fresh);
        return raced != null ? raced : fresh;
    }

    /** A collective runs on its communicator's device; other work on the thread's current one. */
    private int workDevice(NativeFunction fn, long comm) {
        if (fn.change() == Change.ENQUEUE_COLLECTIVE) {
            CommRecord c = tracker.communicator(comm);
            if (c != null) {
                return c.device;
            }
        }
        return tracker.currentDevice();
    }

    /** Whether {@code s} is live and an ordinary stream, whose idleness says its events are complete. */
    boolean liveOrdinary(StreamRecord s) {
        return s != null && !isSpecialStream(s.handle) && streams.get(s.handle) == s;
    }

    /** The thread's current device is looked up only for the special streams, which need it. */
    private long streamKey(long handle) {
        return isSpecialStream(handle) ? specialStreamKey(handle, tracker.currentDevice()) : handle;
    }

    static boolean isSpecialStream(long handle) {
        return handle == 0 || handle == CUDA_STREAM_LEGACY || handle == CUDA_STREAM_PER_THREAD;
    }

    /** 0x0 and cudaStreamLegacy are one stream per device; cudaStreamPerThread one per thread too. */
    @SuppressWarnings("deprecation") // Thread.getId: threadId() is Java 19+, we run on 17
    private static long specialStreamKey(long handle, int device) {
        long dev = device & 0xFFFFL;
        if (handle == CUDA_STREAM_PER_THREAD) {
            return PER_THREAD_STREAM_KEY | (Thread.currentThread().getId() << 16) | dev;
        }
        return LEGACY_STREAM_KEY | dev;
    }
}
