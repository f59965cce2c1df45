package dev.ncclguard.track;

import dev.ncclguard.catalog.DetailKeys;
import dev.ncclguard.catalog.Kind;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Makes the tracker's {@link Snapshot}: the leaks by SPEC.md's rules as immutable views, oldest
 * first, each with the details the report prints for its kind. Runs at exit and for the live
 * view, never on a tracked call.
 */
final class Snapshots {
    private static final Comparator<Object> BY_SERIAL = new Comparator<>() {
        @Override
        public int compare(Object a, Object b) {
            return Long.compare(((Tracked) a).serial, ((Tracked) b).serial);
        }
    };

    /** The details of an event and of a stream leak, in report order: shared by every leak. */
    private static final String[] EVENT_DETAILS = {DetailKeys.STREAM, DetailKeys.DEVICE};
    private static final String[] STREAM_DETAILS = {DetailKeys.PENDING_OPS, DetailKeys.DEVICE};
    private static final String[] MEMORY_DETAILS = {DetailKeys.BYTES, DetailKeys.DEVICE};
    /** Of a registration or a window's counts on its communicator. */
    private static final String[] REGISTRY_DETAILS = {DetailKeys.REGISTERED, DetailKeys.STILL_REGISTERED, DetailKeys.BYTES};
    /** Bytes of a device communicator's struct cleanup hands to ncclDevCommDestroy (zero-padded). */
    private static final int DEVCOMM_STRUCT_PADDED = Resources.DEVCOMM_STRUCT_BYTES[0];

    private Snapshots() {
    }

    /** The leaks and counters now; consistent per handle while other threads keep calling. */
    static Snapshot of(Tracker tracker, Communicators comms, Streams work, Resources resources) {
        List<EventRecord> es = new ArrayList<>(work.events.size() + 16);
        work.events.valuesTo(es);
        List<StreamRecord> ss = new ArrayList<>(work.streams.size() + 16);
        work.streams.valuesTo(ss);
        sortBySerial(ss);

        NcclProfiler profiler = tracker.ncclProfiler();
        List<HandleView> only = List.of();
        long[] counts = {0, 0};
        if (profiler != null) {
            // communicators only NCCL's profiler plugin saw (NCCL linked into a native library), read
            // before the tracker's: a bridge's creation that ends between the two reads is the
            // bridge's in the second (the plugin keeps its record out of the first while it runs),
            // never the plugin's alone in the first and nobody's in the second
            lateClaims(profiler, comms, tracker);
            try {
                only = profiler.unclaimed();
                counts = profiler.unclaimedCounts();
            } catch (RuntimeException e) {
                tracker.internalError(e);
            }
        }
        long created = comms.createdCount();
        long released = comms.releasedCount();
        List<CommRecord> cs = new ArrayList<>(comms.records.size() + 16);
        comms.records.valuesTo(cs);
        sortBySerial(cs);
        if (profiler != null) {
            lateClaims(profiler, cs, tracker); // a nonblocking init's record that came meanwhile
        }
        List<HandleView> commLeaks = new ArrayList<>(cs.size() + only.size());
        for (CommRecord c : cs) {
            commLeaks.add(view(Kind.COMM, c, commDetails(c, profiler), 0));
        }
        commLeaks.addAll(only);
        created += counts[0];
        released += counts[1];
        int liveComms = cs.size() + only.size();
        NativeState c = NativeState.read(tracker.nativeSlots(), es, ss);
        EventLeaks eventLeaks = new EventLeaks(work, es.size(), c);
        for (Object e : bySerial(es)) {
            if (e != null) {
                eventLeaks.add((EventRecord) e); // the work per event in a method of its own: compiled after a few hundred, not 60,000
            }
        }
        List<HandleView> streamLeaks = new ArrayList<>();
        SpecialStreams special = null;
        for (StreamRecord s : ss) {
            long pending = s.nativeSlot < 0 ? s.pendingOps() : c.streamPending(s);
            if (pending <= 0) {
                continue;
            }
            if (Streams.isSpecialStream(s.handle)) {
                // Java's record and C's of one special stream are one stream: reported once
                if (special == null) {
                    special = new SpecialStreams();
                }
                special.add(s, pending);
            } else {
                streamLeaks.add(view(Kind.STREAM, s, Details.of(STREAM_DETAILS, pending, s.device), 0));
            }
        }
        if (special != null) {
            special.addTo(streamLeaks);
        }
        List<DevCommRecord> ds = Resources.devComms(cs);
        List<HandleView> devCommLeaks = new ArrayList<>(ds.size());
        for (DevCommRecord d : ds) {
            devCommLeaks.add(devCommView(d));
        }
        List<MemoryRecord> ms = new ArrayList<>(resources.memory.size() + 16);
        resources.memory.valuesTo(ms);
        sortBySerial(ms);
        List<HandleView> memoryLeaks = new ArrayList<>(ms.size());
        for (MemoryRecord m : ms) {
            memoryLeaks.add(view(Kind.MEMORY, m, Details.of(MEMORY_DETAILS, m.bytes, m.device), 0));
        }
        return new Snapshot(commLeaks, eventLeaks.views, streamLeaks, devCommLeaks, memoryLeaks, created,
                released, liveComms, es.size(), ss.size(), ds.size(), ms.size(), tracker.internalErrors(),
                tracker.firstInternalError());
    }


    /** Communicators whose plugin record came after their creation (nonblocking inits) claim it now. */
    private static void lateClaims(NcclProfiler profiler, Communicators comms, Tracker tracker) {
        List<CommRecord> cs = new ArrayList<>(comms.records.size() + 16);
        comms.records.valuesTo(cs);
        sortBySerial(cs);
        lateClaims(profiler, cs, tracker);
    }

    private static void lateClaims(NcclProfiler profiler, List<CommRecord> cs, Tracker tracker) {
        try {
            for (CommRecord c : cs) {
                if (c.profilerRecord == 0 && c.hasCommId) {
                    c.profilerRecord = profiler.claimLate(c.commId, c.rank, c.nranks);
                }
            }
        } catch (RuntimeException e) {
            tracker.internalError(e);
        }
    }

    /**
     * The state of the records whose hot state is in C slots, read in two batches (100,000 events
     * cost one call each way), by identity of their record.
     */
    private static final class NativeState {
        static final NativeState NONE = new NativeState(null, null, null, null);
        private final Map<Tracked, Integer> eventAt;
        private final long[] events;
        private final Map<Tracked, Integer> streamAt;
        private final long[] streams;

        private NativeState(Map<Tracked, Integer> eventAt, long[] events, Map<Tracked, Integer> streamAt, long[] streams) {
            this.eventAt = eventAt;
            this.events = events;
            this.streamAt = streamAt;
            this.streams = streams;
        }

        static NativeState read(NativeSlots n, List<EventRecord> es, List<StreamRecord> ss) {
            if (n == null) {
                return NONE;
            }
            Map<Tracked, Integer> eventAt = new IdentityHashMap<>();
            int[] eslots = slotsOf(es, eventAt);
            Map<Tracked, Integer> streamAt = new IdentityHashMap<>();
            int[] sslots = slotsOf(ss, streamAt);
            long[] events = new long[3 * eslots.length];
            long[] streams = new long[sslots.length];
            if (eslots.length > 0) {
                n.eventsPending(eslots, events);
            }
            if (sslots.length > 0) {
                n.streamsPending(sslots, streams);
            }
            return new NativeState(eventAt, events, streamAt, streams);
        }

        private static int[] slotsOf(List<? extends Tracked> records, Map<Tracked, Integer> at) {
            int[] slots = new int[16];
            int n = 0;
            for (Tracked t : records) {
                int slot = t.nativeSlot;
                if (slot >= 0) {
                    if (n == slots.length) {
                        slots = Arrays.copyOf(slots, n * 2);
                    }
                    at.put(t, n);
                    slots[n++] = slot;
                }
            }
            return Arrays.copyOf(slots, n);
        }

        /** pending 1/0 (-1 not live), the last record's stream slot, its stream handle; null when unknown. */
        long[] event(EventRecord e) {
            Integer i = eventAt == null ? null : eventAt.get(e);
            return i == null ? null : new long[] {events[3 * i], events[3 * i + 1], events[3 * i + 2]};
        }

        long streamPending(StreamRecord s) {
            Integer i = streamAt == null ? null : streamAt.get(s);
            return i == null ? 0 : streams[i];
        }
    }

    /**
     * The special streams' leaks, one per stream: 0x0 and cudaStreamLegacy are one stream per
     * device, cudaStreamPerThread one per thread and device; a Java record and C's of one stream
     * are reported as the oldest of them, with their pending ops summed.
     */
    private static final class SpecialStreams {
        private final Map<String, StreamRecord> first = new LinkedHashMap<>();
        private final Map<String, Long> pending = new HashMap<>();

        void add(StreamRecord s, long ops) {
            String key = (s.handle == Streams.CUDA_STREAM_PER_THREAD ? "pt/" + s.thread + "/" : "legacy/") + s.device;
            StreamRecord known = first.get(key);
            if (known == null || s.serial < known.serial) {
                first.put(key, s);
            }
            pending.merge(key, ops, Long::sum);
        }

        void addTo(List<HandleView> leaks) {
            for (Map.Entry<String, StreamRecord> e : first.entrySet()) {
                StreamRecord s = e.getValue();
                leaks.add(view(Kind.STREAM, s, Details.of(STREAM_DETAILS, pending.get(e.getKey()), s.device), 0));
            }
        }
    }

    /** The live view's counts of what live communicators hold, and of the memory. */
    static ResourceCounts resourceCounts(Communicators comms, Resources resources) {
        List<CommRecord> cs = new ArrayList<>(comms.records.size() + 16);
        comms.records.valuesTo(cs);
        long registrations = 0;
        long registeredBytes = 0;
        long windows = 0;
        long windowBytes = 0;
        long devComms = 0;
        for (CommRecord c : cs) {
            CommResources held = c.resourcesOrNull();
            if (held != null) {
                long[] r = held.counts(false);
                long[] w = held.counts(true);
                registrations += r[1];
                registeredBytes += r[2];
                windows += w[1];
                windowBytes += w[2];
                devComms += held.liveDevComms();
            }
        }
        List<MemoryRecord> ms = new ArrayList<>(resources.memory.size() + 16);
        resources.memory.valuesTo(ms);
        long memoryBytes = 0;
        for (MemoryRecord m : ms) {
            memoryBytes += m.bytes;
        }
        return new ResourceCounts(ms.size(), memoryBytes, resources.memoryAllocatedCount(),
                resources.memoryFreedCount(), registrations, registeredBytes, windows, windowBytes, devComms);
    }

    private static HandleView devCommView(DevCommRecord d) {
        CommRecord c = d.comm;
        Map<String, Object> details = new LinkedHashMap<>();
        details.put(DetailKeys.COMM, hex(c.handle));
        if (c.hasCommId) {
            details.put(DetailKeys.COMM_ID, CommIds.hex(c.commId));
        }
        details.put(DetailKeys.RANK, d.rank);
        details.put(DetailKeys.NRANKS, d.nranks);
        details.put(DetailKeys.DEVICE, d.device);
        byte[] struct = d.struct == null ? null : Arrays.copyOf(d.struct, DEVCOMM_STRUCT_PADDED);
        return new HandleView(Kind.DEVCOMM, d.handle, d.api, d.bridge, d.thread, d.createdAtMillis, d.creation,
                d.device, Details.copyOf(details), d.access, d, 0, new DevCommStruct(c.handle, struct));
    }

    /** Oldest first (see {@link #bySerial}). */
    static <T extends Tracked> void sortBySerial(List<T> records) {
        int i = 0;
        for (Object t : bySerial(records)) {
            if (t != null) {
                @SuppressWarnings("unchecked")
                T record = (T) t;
                records.set(i++, record);
            }
        }
    }

    /**
     * The records oldest first, with nulls between them to skip. They come in hash order. This runs
     * once, at exit, in code the JIT has not compiled: a comparison sort of 100,000 records (or of
     * packed longs) runs interpreted for hundreds of milliseconds, so serials, which are dense, are
     * used as slots instead (two linear passes). Sparse serials (most handles of the run released)
     * fall back to a sort.
     */
    private static Object[] bySerial(List<? extends Tracked> records) {
        int n = records.size();
        long min = Long.MAX_VALUE;
        long max = Long.MIN_VALUE;
        for (Tracked t : records) {
            min = Math.min(min, t.serial);
            max = Math.max(max, t.serial);
        }
        if (n < 2 || max - min >= 4L * n + 1024) {
            Object[] sorted = records.toArray();
            Arrays.sort(sorted, BY_SERIAL);
            return sorted;
        }
        Object[] slots = new Object[(int) (max - min + 1)];
        for (Tracked t : records) {
            slots[(int) (t.serial - min)] = t; // serials are unique
        }
        return slots;
    }

    /**
     * The views of the pending events. Events recorded on one stream from one device share its hex
     * handle, its liveness (asked once) and their details, which are immutable: 100,000 events of
     * one loop are 100,000 views, not 100,000 maps too.
     */
    private static final class EventLeaks {
        final List<HandleView> views;
        private final Streams work;
        private StreamRecord lastStream;
        private int lastDevice;
        private Details lastDetails;
        private long lastRecordedOn;

        private final NativeState c;

        EventLeaks(Streams work, int live, NativeState c) {
            this.work = work;
            this.views = new ArrayList<>(live);
            this.c = c;
        }

        void add(EventRecord e) {
            if (e.nativeSlot >= 0) {
                addNative(e);
                return;
            }
            Object pendingOn = e.pendingOn();
            if (pendingOn == EventRecord.NOT_PENDING) {
                return;
            }
            StreamRecord on = (StreamRecord) pendingOn;
            if (lastDetails == null || lastWasNative || on != lastStream || e.device != lastDevice) {
                lastWasNative = false;
                lastStream = on;
                lastDevice = e.device;
                lastDetails = Details.of(EVENT_DETAILS, on == null ? null : hex(on.handle), e.device);
                lastRecordedOn = work.liveOrdinary(on) ? on.handle : 0;
            }
            views.add(view(Kind.EVENT, e, lastDetails, lastRecordedOn));
        }

        /** An event whose state is in a C slot: pending as C says, on the stream of its last record there. */
        private void addNative(EventRecord e) {
            long[] state = c.event(e);
            if (state == null || state[0] != 1) {
                return; // complete, or its slot is no longer live: C ended it, the release is the tracker's
            }
            long stream = state[2];
            if (lastDetails == null || !lastWasNative || stream != lastRecordedOnNative || e.device != lastDevice) {
                lastWasNative = true;
                lastStream = null;
                lastDevice = e.device;
                lastRecordedOnNative = stream;
                lastDetails = Details.of(EVENT_DETAILS, hex(stream), e.device);
                StreamRecord known = Streams.isSpecialStream(stream) ? null : work.streams.get(stream);
                lastRecordedOn = known != null && !known.ended() ? stream : 0;
            }
            views.add(view(Kind.EVENT, e, lastDetails, lastRecordedOn));
        }

        private long lastRecordedOnNative = -1;
        private boolean lastWasNative;
    }

    private static Details commDetails(CommRecord c, NcclProfiler profiler) {
        Map<String, Object> details = new LinkedHashMap<>();
        if (c.rank >= 0) {
            details.put(DetailKeys.RANK, c.rank);
        }
        if (c.nranks >= 0) {
            details.put(DetailKeys.NRANKS, c.nranks);
        }
        details.put(DetailKeys.DEVICE, c.device);
        if (c.hasCommId) {
            details.put(DetailKeys.COMM_ID, CommIds.hex(c.commId));
        }
        if (c.hasParent) {
            details.put(DetailKeys.PARENT_COMM_ID, CommIds.hex(c.parentCommId));
        }
        if (c.finalized) {
            details.put(DetailKeys.FINALIZED, true);
        }
        if (profiler != null && c.profilerRecord != 0) {
            try {
                Map<String, Object> inFlight = profiler.inFlightDetails(c.profilerRecord);
                if (inFlight != null) {
                    details.put(DetailKeys.IN_FLIGHT, inFlight);
                }
            } catch (RuntimeException e) {
                // what is in flight is left out; the leak is still reported
            }
        }
        if (c.revoked) {
            details.put(DetailKeys.REVOKED, true);
        }
        CommResources held = c.resourcesOrNull();
        if (held != null && held.any()) {
            long[] r = held.counts(false);
            if (r[0] > 0) {
                details.put(DetailKeys.REGISTRATIONS, Details.of(REGISTRY_DETAILS, r[0], r[1], r[2]));
            }
            long[] w = held.counts(true);
            if (w[0] > 0) {
                details.put(DetailKeys.WINDOWS, Details.of(REGISTRY_DETAILS, w[0], w[1], w[2]));
            }
            int devComms = held.liveDevComms();
            if (devComms > 0) {
                details.put(DetailKeys.DEVICE_COMMUNICATORS, devComms);
            }
        }
        return Details.copyOf(details);
    }

    private static String hex(long handle) {
        return "0x" + Long.toHexString(handle);
    }

    private static HandleView view(Kind kind, Tracked t, Details details, long recordedOn) {
        return new HandleView(kind, t.handle, t.api, t.bridge, t.thread, t.createdAtMillis, t.creation,
                t.device, details, t.access, t, recordedOn);
    }
}
