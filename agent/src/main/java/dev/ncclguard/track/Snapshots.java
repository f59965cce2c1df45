package dev.ncclguard.track;

import dev.ncclguard.catalog.Kind;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
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
    private static final String[] EVENT_DETAILS = {"stream", "device"};
    private static final String[] STREAM_DETAILS = {"pendingOps", "device"};
    private static final String[] MEMORY_DETAILS = {"bytes", "device"};
    /** Of a registration or a window's counts on its communicator. */
    private static final String[] REGISTRY_DETAILS = {"registered", "stillRegistered", "bytes"};
    /** Bytes of a device communicator's struct cleanup hands to ncclDevCommDestroy (zero-padded). */
    private static final int DEVCOMM_STRUCT_PADDED = Resources.DEVCOMM_STRUCT_BYTES[0];

    private Snapshots() {
    }

    /** The leaks and counters now; consistent per handle while other threads keep calling. */
    static Snapshot of(Tracker tracker, Communicators comms, Streams work, Resources resources) {
        List<CommRecord> cs = new ArrayList<>(comms.records.size() + 16);
        comms.records.valuesTo(cs);
        List<EventRecord> es = new ArrayList<>(work.events.size() + 16);
        work.events.valuesTo(es);
        List<StreamRecord> ss = new ArrayList<>(work.streams.size() + 16);
        work.streams.valuesTo(ss);
        sortBySerial(cs);
        sortBySerial(ss);

        List<HandleView> commLeaks = new ArrayList<>(cs.size());
        for (CommRecord c : cs) {
            commLeaks.add(view(Kind.COMM, c, commDetails(c), 0));
        }
        EventLeaks eventLeaks = new EventLeaks(work, es.size());
        for (Object e : bySerial(es)) {
            if (e != null) {
                eventLeaks.add((EventRecord) e); // the work per event in a method of its own: compiled after a few hundred, not 60,000
            }
        }
        List<HandleView> streamLeaks = new ArrayList<>();
        for (StreamRecord s : ss) {
            long pending = s.pendingOps();
            if (pending > 0) {
                streamLeaks.add(view(Kind.STREAM, s, Details.of(STREAM_DETAILS, pending, s.device), 0));
            }
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
        return new Snapshot(commLeaks, eventLeaks.views, streamLeaks, devCommLeaks, memoryLeaks, comms.createdCount(),
                comms.releasedCount(), cs.size(), es.size(), ss.size(), ds.size(), ms.size(), tracker.internalErrors(),
                tracker.firstInternalError());
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
        details.put("comm", hex(c.handle));
        if (c.hasCommId) {
            details.put("commId", CommIds.hex(c.commId));
        }
        details.put("rank", d.rank);
        details.put("nranks", d.nranks);
        details.put("device", d.device);
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

        EventLeaks(Streams work, int live) {
            this.work = work;
            this.views = new ArrayList<>(live);
        }

        void add(EventRecord e) {
            Object pendingOn = e.pendingOn();
            if (pendingOn == EventRecord.NOT_PENDING) {
                return;
            }
            StreamRecord on = (StreamRecord) pendingOn;
            if (lastDetails == null || on != lastStream || e.device != lastDevice) {
                lastStream = on;
                lastDevice = e.device;
                lastDetails = Details.of(EVENT_DETAILS, on == null ? null : hex(on.handle), e.device);
                lastRecordedOn = work.liveOrdinary(on) ? on.handle : 0;
            }
            views.add(view(Kind.EVENT, e, lastDetails, lastRecordedOn));
        }
    }

    private static Details commDetails(CommRecord c) {
        Map<String, Object> details = new LinkedHashMap<>();
        if (c.rank >= 0) {
            details.put("rank", c.rank);
        }
        if (c.nranks >= 0) {
            details.put("nranks", c.nranks);
        }
        details.put("device", c.device);
        if (c.hasCommId) {
            details.put("commId", CommIds.hex(c.commId));
        }
        if (c.hasParent) {
            details.put("parentCommId", CommIds.hex(c.parentCommId));
        }
        if (c.finalized) {
            details.put("finalized", true);
        }
        if (c.revoked) {
            details.put("revoked", true);
        }
        CommResources held = c.resourcesOrNull();
        if (held != null && held.any()) {
            long[] r = held.counts(false);
            if (r[0] > 0) {
                details.put("registrations", Details.of(REGISTRY_DETAILS, r[0], r[1], r[2]));
            }
            long[] w = held.counts(true);
            if (w[0] > 0) {
                details.put("windows", Details.of(REGISTRY_DETAILS, w[0], w[1], w[2]));
            }
            int devComms = held.liveDevComms();
            if (devComms > 0) {
                details.put("deviceCommunicators", devComms);
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
