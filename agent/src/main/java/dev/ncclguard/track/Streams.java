package dev.ncclguard.track;

import dev.ncclguard.catalog.Change;
import dev.ncclguard.catalog.NativeFunction;
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

    private final Tracker tracker;
    final LongMap<EventRecord> events = new LongMap<>();
    final LongMap<StreamRecord> streams = new LongMap<>();
    /** Threads inside ncclGroupStart/End now: while none is, enqueued work skips the thread-local. */
    private final AtomicInteger threadsInGroups = new AtomicInteger();
    private final AtomicLong opSeq = new AtomicLong();

    Streams(Tracker tracker) {
        this.tracker = tracker;
    }

    // --- what the calls of the hot path act on, found before the call ---

    EventRecord event(long handle) {
        return events.get(handle);
    }

    StreamRecord stream(long handle) {
        return streams.get(streamKey(handle));
    }

    /** A special stream's key is the communicator's device: left to the exit. */
    StreamRecord collectiveStream(long stream) {
        return isSpecialStream(stream) ? null : streams.get(stream);
    }

    // --- events ---

    void eventCreated(NativeFunction fn, CallArgs args, String bridge, NativeAccess access) {
        long h = args.handleOut(fn.handle());
        if (h != 0) {
            events.put(h, new EventRecord(h, tracker.nextSerial(), fn.symbol(), bridge, Tracker.threadName(),
                    tracker.now(), tracker.sharedStack(), tracker.currentDevice(), access));
            tracker.listener().eventCreated(h);
        }
    }

    /** Before a cudaEventDestroy: the record's serial, or {@link Tracker#CLAIMED_BY_CLEANUP}. */
    long enterEventRelease(long handle) {
        return Tracked.releaseToken(events.get(handle));
    }

    /** After a cudaEventDestroy: a success ends the record {@code token} names, a failure leaves it live. */
    void eventReleased(long handle, int status, long token) {
        if (status != 0) {
            Tracked.releaseFailed(events.get(handle), token);
        } else if (events.removeIfSerial(handle, token) != null) {
            tracker.listener().eventDestroyed(handle);
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
        long op = s.enqueueRecord(opSeq.get(), token);
        EventRecord e = events.get(event);
        if (e != null) {
            e.recorded(s, op, tracker.thread().recordNumber(opSeq));
        }
    }

    // --- streams ---

    void streamCreated(NativeFunction fn, CallArgs args, String bridge, NativeAccess access) {
        long h = args.handleOut(fn.handle());
        if (h != 0 && !isSpecialStream(h)) {
            streams.put(h, new StreamRecord(h, tracker.nextSerial(), fn.symbol(), bridge, Tracker.threadName(),
                    tracker.now(), tracker.sharedStack(), tracker.currentDevice(), access, opSeq));
            tracker.listener().streamCreated(h);
        }
    }

    /** Before a cudaStreamDestroy: the serial of the record it would end. */
    long enterStreamRelease(long handle) {
        StreamRecord s = streams.get(streamKey(handle));
        return s == null ? 0 : s.serial;
    }

    void streamReleased(long handle, long token) {
        if (streams.removeIfSerial(streamKey(handle), token) != null) {
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
            s.enqueue(opSeq.get());
        }
    }

    /** cudaStreamWaitEvent: one op (a wait) on the stream. */
    void waited(NativeFunction fn, Object found, long handle, long stream, String bridge, NativeAccess access) {
        streamForWork(found, fn, handle, stream, bridge, access).enqueue(opSeq.get());
    }

    // --- the device and groups ---

    /** Before a device synchronize: work whose exit reads the sequence before this step was called before. */
    long deviceSyncStarts() {
        return opSeq.incrementAndGet();
    }

    void deviceSynchronized(long token) {
        int device = tracker.currentDevice();
        streams.forEach(s -> {
            if (s.device == device) {
                s.deviceSynchronized(token);
            }
        });
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
                thread.grouped(i).enqueue(opSeq.get());
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
