package dev.ncclguard.track;

import dev.ncclguard.catalog.Effect;
import dev.ncclguard.catalog.Kind;
import dev.ncclguard.catalog.NativeFunction;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * Live communicators, events and streams, fed by the bridges around each native call:
 * {@link #enter} before it, {@link #exit} after it with the C status. Only successful calls
 * change state. Thread-safe; no lock is held across a native call, and the calls of the hot path
 * (event records and queries, collectives) allocate nothing.
 *
 * <p>A release's {@code enter} returns the serial of the record it would end, and its
 * {@code exit} ends that record only: when the address was handed out again in between, the new
 * record survives. Work on streams is counted (see {@link StreamRecord}); the numbers that order
 * a call against concurrent work come from one global op sequence, which a device synchronize
 * steps and work on streams only reads (streams reserve their op numbers in it, and threads their
 * event record numbers, a block at a time). NCCL work called inside
 * ncclGroupStart/End counts at the outermost successful ncclGroupEnd, where NCCL launches it.
 */
public final class Tracker {
    public static final int NCCL_SUCCESS = 0;
    /** Nonblocking communicators: creation and finalize return this with the handle written. */
    public static final int NCCL_IN_PROGRESS = 7;
    /** cudaEventQuery, cudaStreamQuery: the work is not complete yet. */
    public static final int CUDA_ERROR_NOT_READY = 600;
    public static final int UNIQUE_ID_BYTES = 128;

    /** cudaStreamLegacy and cudaStreamPerThread, the special handles of cuda_runtime_api.h. */
    static final long CUDA_STREAM_LEGACY = 0x1;
    static final long CUDA_STREAM_PER_THREAD = 0x2;
    // Map keys of the special streams, which are one stream per device (per thread and device for
    // cudaStreamPerThread). User-space addresses never set the top bit, so these cannot collide.
    private static final long LEGACY_STREAM_KEY = 0x8000_0000_0000_0000L;
    private static final long PER_THREAD_STREAM_KEY = 0xC000_0000_0000_0000L;

    /** A class, not a lambda: communicators() runs at exit, where a lambda's first call links method handles. */
    private static final Comparator<CommLife> BY_CREATION = new Comparator<>() {
        @Override
        public int compare(CommLife a, CommLife b) {
            return Long.compare(a.createdAtMillis(), b.createdAtMillis());
        }
    };

    private static final Comparator<Object> BY_SERIAL = new Comparator<>() {
        @Override
        public int compare(Object a, Object b) {
            return Long.compare(((Tracked) a).serial, ((Tracked) b).serial);
        }
    };

    /** The details of an event and of a stream leak, in report order: shared by every leak. */
    private static final String[] EVENT_DETAILS = {"stream", "device"};
    private static final String[] STREAM_DETAILS = {"pendingOps", "device"};

    /** Bounds that keep a garbage argument from turning into a long loop. */
    private static final int MAX_INIT_ALL_DEVICES = 1 << 12;
    private static final int MAX_EXCLUDED_RANKS = 1 << 20;
    /** Released communicators kept for the report's communicators list (the newest). */
    static final int RELEASED_COMMS_KEPT = 10_000;
    /** The token of a stream call whose stream was not known at enter: it covers no work. */
    private static final long NO_TOKEN = -1;
    /**
     * What {@link #enter} returns for a release of a handle that the exit-time cleanup has claimed:
     * the bridge must not let the call reach the library (it parks the thread: this happens only
     * while the JVM exits, after the application's shutdown hooks).
     */
    public static final long CLAIMED_BY_CLEANUP = Long.MIN_VALUE;

    /**
     * @param stacks record the creating Java stack of each handle
     * @param clock  wall-clock milliseconds, for createdAt and startedAt
     */
    public record Config(boolean stacks, LongSupplier clock) {
        public Config {
            Objects.requireNonNull(clock, "clock");
        }

        public static Config defaults() {
            return new Config(true, System::currentTimeMillis);
        }
    }

    /** Volatile: a second attach may turn stacks on or off while the application runs. */
    private volatile boolean stacks;
    private final LongSupplier clock;
    private volatile TrackerListener listener = TrackerListener.NONE;
    private final long startedAtMillis;

    private final LongMap<CommRecord> comms = new LongMap<>();
    private final LongMap<EventRecord> events = new LongMap<>();
    private final LongMap<StreamRecord> streams = new LongMap<>();

    /** Threads inside ncclGroupStart/End now: while none is, enqueued work skips the thread-local. */
    private final AtomicInteger threadsInGroups = new AtomicInteger();
    private final AtomicLong serials = new AtomicLong();
    private final AtomicLong opSeq = new AtomicLong();
    private final AtomicLong commsCreated = new AtomicLong();
    private final AtomicLong commsReleased = new AtomicLong();
    private final AtomicLong internalErrors = new AtomicLong();
    private final ReleasedComms released = new ReleasedComms(RELEASED_COMMS_KEPT);
    private final CreationStacks creationStacks = new CreationStacks();
    private volatile Throwable firstInternalError;
    /** Set by the first tracked call: a JVM that never touched NCCL or CUDA gets no text report. */
    private volatile boolean sawAnyCall;

    /** A subclass, not withInitial(ThreadState::new): a method reference spins classes in premain. */
    private final ThreadLocal<ThreadState> threads = new ThreadLocal<>() {
        @Override
        protected ThreadState initialValue() {
            return new ThreadState();
        }
    };

    public Tracker() {
        this(Config.defaults());
    }

    public Tracker(Config config) {
        this.stacks = config.stacks();
        this.clock = config.clock();
        this.startedAtMillis = clock.getAsLong();
    }

    public long startedAtMillis() {
        return startedAtMillis;
    }

    /** Who is told of creations and releases from now on; {@link TrackerListener#NONE} for nobody. */
    public void listener(TrackerListener listener) {
        this.listener = Objects.requireNonNull(listener, "listener");
    }

    /** Record the creating stack of handles created from now on, or not. */
    public void stacks(boolean stacks) {
        this.stacks = stacks;
    }

    /** Whether any tracked NCCL or CUDA call has returned since the tracker started. */
    public boolean sawAnyCall() {
        return sawAnyCall;
    }

    /**
     * Before the native call: returns the token its {@link #exit} needs (the record a release would
     * end, the event record or stream count a query or synchronize would cover).
     */
    public long enter(NativeFunction fn, CallArgs args) {
        if (fn == null || args == null) {
            return 0;
        }
        try {
            switch (fn.effect()) {
                case COMM_DESTROY:
                case COMM_ABORT:
                    return releaseEnter(comms.get(args.handle(fn.handle())));
                case EVENT_DESTROY:
                    return releaseEnter(events.get(args.handle(fn.handle())));
                case STREAM_DESTROY:
                    return serialOf(streams.get(streamKey(args.handle(fn.stream()))));
                case EVENT_QUERY:
                case EVENT_SYNC:
                case EVENT_RECORD:
                case STREAM_SYNC:
                case STREAM_QUERY:
                case COMM_ENQUEUE:
                case STREAM_WAIT_EVENT:
                    return token(fn, find(fn, args.handle(fn.handle()), args.handle(fn.stream())));
                case DEVICE_SYNC:
                    // work whose exit reads the sequence before this step was called before
                    return opSeq.incrementAndGet();
                default:
                    return 0;
            }
        } catch (RuntimeException e) {
            internalError(e);
            return 0;
        }
    }

    /**
     * After the native call returned {@code status}: applies what a successful call did.
     *
     * @param token  what {@link #enter} returned for this call
     * @param bridge the bridge that saw the call, for the report
     * @param access the library instance the call went to, kept with handles it creates
     */
    public void exit(NativeFunction fn, CallArgs args, int status, long token, String bridge,
            NativeAccess access) {
        if (fn == null || args == null) {
            return;
        }
        if (!sawAnyCall) {
            firstCall();
        }
        try {
            if (ON_HANDLES[fn.effect().ordinal()]) {
                long handle = args.handle(fn.handle());
                long stream = args.handle(fn.stream());
                exitOnHandles(fn, status == 0 ? find(fn, handle, stream) : null, handle, stream, status, token,
                        bridge, access);
                return;
            }
            releaseFailedIfSo(fn, args, status, token);
            switch (fn.effect()) {
                case COMM_CREATE -> {
                    if (succeededOrInProgress(status)) {
                        commCreated(fn, args, bridge, access);
                    }
                }
                case COMM_CREATE_ALL -> {
                    if (succeededOrInProgress(status)) {
                        cliqueCreated(fn, args, bridge, access);
                    }
                }
                case COMM_SPLIT, COMM_SHRINK -> {
                    if (succeededOrInProgress(status)) {
                        childCreated(fn, args, bridge, access);
                    }
                }
                case COMM_FINALIZE -> {
                    // a nonblocking communicator's finalize returns ncclInProgress as its success
                    if (succeededOrInProgress(status)) {
                        CommRecord c = comms.get(args.handle(fn.handle()));
                        if (c != null) {
                            c.finalized = true;
                        }
                    }
                }
                case COMM_DESTROY, COMM_ABORT -> {
                    long h = args.handle(fn.handle());
                    CommRecord c = status == NCCL_SUCCESS ? comms.removeIfSerial(h, token) : null;
                    if (c != null) {
                        commsReleased.incrementAndGet();
                        released.add(CommLife.of(c, clock.getAsLong(), fn.symbol()));
                        try {
                            listener.communicatorReleased(h, fn.symbol(), bridge);
                        } catch (RuntimeException e) {
                            internalError(e);
                        }
                    }
                }
                case EVENT_CREATE -> {
                    long h = args.handleOut(fn.handle());
                    if (status == 0 && h != 0) {
                        events.put(h, new EventRecord(h, serials.incrementAndGet(), fn.symbol(), bridge,
                                threadName(), clock.getAsLong(), sharedStack(), currentDevice(), access));
                        listener.eventCreated(h);
                    }
                }
                case EVENT_DESTROY -> {
                    long h = args.handle(fn.handle());
                    if (status == 0 && events.removeIfSerial(h, token) != null) {
                        listener.eventDestroyed(h);
                    }
                }
                case STREAM_CREATE -> {
                    long h = args.handleOut(fn.handle());
                    if (status == 0 && h != 0 && !isSpecialStream(h)) {
                        streams.put(h, new StreamRecord(h, serials.incrementAndGet(), fn.symbol(), bridge,
                                threadName(), clock.getAsLong(), sharedStack(), currentDevice(), access, opSeq));
                        listener.streamCreated(h);
                    }
                }
                case STREAM_DESTROY -> {
                    long h = args.handle(fn.stream());
                    if (status == 0 && streams.removeIfSerial(streamKey(h), token) != null) {
                        listener.streamDestroyed(h);
                    }
                }
                case DEVICE_SYNC -> {
                    if (status == 0) {
                        int device = currentDevice();
                        streams.forEach(s -> {
                            if (s.device == device) {
                                s.deviceSynchronized(token);
                            }
                        });
                    }
                }
                case SET_DEVICE -> {
                    if (status == 0) {
                        threads.get().device = args.intArg(fn.device());
                    }
                }
                case GROUP_START -> {
                    if (status == 0 && threads.get().groupDepth++ == 0) {
                        threadsInGroups.incrementAndGet();
                    }
                }
                case GROUP_END -> groupEnded(status);
                default -> {
                }
            }
        } catch (RuntimeException e) {
            internalError(e);
        }
    }

    /**
     * Whether {@code fn}'s tracking needs no argument but its handle and stream passed by value
     * (event records, queries and synchronizes, collectives, stream queries and synchronizes):
     * then a bridge may call {@link #find}, {@link #token} and {@link #exit(NativeFunction, Object,
     * long, long, int, long, String, NativeAccess)} with the handles it decoded, in place of
     * {@link #enter} and {@link #exit(NativeFunction, CallArgs, int, long, String, NativeAccess)}.
     */
    public static boolean onHandles(NativeFunction fn) {
        return ON_HANDLES[fn.effect().ordinal()];
    }

    private static final boolean[] ON_HANDLES = new boolean[Effect.values().length];

    static {
        for (Effect e : new Effect[] {Effect.EVENT_QUERY, Effect.EVENT_SYNC, Effect.EVENT_RECORD, Effect.STREAM_SYNC,
                Effect.STREAM_QUERY, Effect.COMM_ENQUEUE, Effect.STREAM_WAIT_EVENT}) {
            ON_HANDLES[e.ordinal()] = true;
        }
    }

    /**
     * Before a call of an {@link #onHandles} function: the record it acts on (its event, or the
     * stream its work goes to), or null. The bridge hands it to {@link #token} and to the exit, so
     * that a call looks its record up once.
     *
     * @param handle the argument at {@code fn.handle()}, 0 if none
     * @param stream the argument at {@code fn.stream()}, 0 if none
     */
    public Object find(NativeFunction fn, long handle, long stream) {
        try {
            switch (fn.effect()) {
                case EVENT_QUERY:
                case EVENT_SYNC:
                    return events.get(handle);
                case EVENT_RECORD:
                case STREAM_SYNC:
                case STREAM_QUERY:
                case STREAM_WAIT_EVENT:
                    return streams.get(streamKey(stream));
                case COMM_ENQUEUE:
                    // a special stream's key is the communicator's device: left to the exit
                    return isSpecialStream(stream) ? null : streams.get(stream);
                default:
                    return null;
            }
        } catch (RuntimeException e) {
            internalError(e);
            return null;
        }
    }

    /** What a bridge passes for a handle it did not decode, {@link #exitReadsHandles} having said so. */
    public static final long NOT_READ = Long.MIN_VALUE;

    /** Whether {@link #find} reads the stream argument of {@code fn} (else its handle argument). */
    public static boolean findsByStream(NativeFunction fn) {
        Effect e = fn.effect();
        return e != Effect.EVENT_QUERY && e != Effect.EVENT_SYNC;
    }

    /**
     * Whether the exit of an {@link #onHandles} call that found {@code found} reads its handle,
     * its stream or its access (when it may create a stream record). A query or synchronize does
     * not, nor does work on a stream whose record was found and is still current: a bridge may
     * pass {@link #NOT_READ} and a null access then. Asked once, right before the exit.
     */
    public static boolean exitReadsHandles(NativeFunction fn, Object found) {
        switch (fn.effect()) {
            case EVENT_QUERY:
            case EVENT_SYNC:
            case STREAM_SYNC:
            case STREAM_QUERY:
                return false;
            case COMM_ENQUEUE:
            case STREAM_WAIT_EVENT:
                return !(found instanceof StreamRecord s && !s.ended());
            default:
                return true;
        }
    }

    /** Before the call, after {@link #find}: the token its exit needs, as {@link #enter} returns it. */
    public long token(NativeFunction fn, Object found) {
        switch (fn.effect()) {
            case EVENT_QUERY:
            case EVENT_SYNC:
                return found instanceof EventRecord e ? e.lastRecordSeq() : 0;
            case EVENT_RECORD:
            case STREAM_SYNC:
            case STREAM_QUERY:
                return found instanceof StreamRecord s ? s.enqueued() : NO_TOKEN;
            default:
                return 0;
        }
    }

    /**
     * After the native call of an {@link #onHandles} function returned {@code status}: what
     * {@link #exit(NativeFunction, CallArgs, int, long, String, NativeAccess)} does, with the
     * record {@link #find} returned before the call and the handles the bridge decoded.
     */
    public void exit(NativeFunction fn, Object found, long handle, long stream, int status, long token,
            String bridge, NativeAccess access) {
        if (fn == null) {
            return;
        }
        if (!sawAnyCall) {
            firstCall();
        }
        try {
            exitOnHandles(fn, found, handle, stream, status, token, bridge, access);
        } catch (RuntimeException e) {
            internalError(e);
        }
    }

    private void exitOnHandles(NativeFunction fn, Object found, long handle, long stream, int status, long token,
            String bridge, NativeAccess access) {
        // a query's cudaErrorNotReady, like any error, changes nothing
        if (status != 0) {
            return;
        }
        switch (fn.effect()) {
            case EVENT_QUERY, EVENT_SYNC -> {
                // a record released since find() is no longer the handle's: its token covers nothing now
                if (found instanceof EventRecord e && !e.ended()) {
                    e.completed(token);
                }
            }
            case COMM_ENQUEUE -> {
                StreamRecord s = streamForWork(found, fn, handle, stream, bridge, access);
                ThreadState thread;
                if (threadsInGroups.get() != 0 && (thread = threads.get()).groupDepth > 0) {
                    thread.deferToGroupEnd(s);
                } else {
                    s.enqueue(opSeq.get());
                }
            }
            case STREAM_WAIT_EVENT ->
                streamForWork(found, fn, handle, stream, bridge, access).enqueue(opSeq.get());
            case EVENT_RECORD -> {
                StreamRecord s = streamForWork(found, fn, handle, stream, bridge, access);
                long op = s.enqueueRecord(opSeq.get(), token);
                EventRecord e = events.get(handle);
                if (e != null) {
                    e.recorded(s, op, threads.get().recordNumber(opSeq));
                }
            }
            case STREAM_SYNC, STREAM_QUERY -> {
                if (found instanceof StreamRecord s && !s.ended()) {
                    s.markDone(token);
                }
            }
            default -> {
            }
        }
    }

    /** The leaks and counters now; consistent per handle while other threads keep calling. */
    public Snapshot snapshot() {
        List<CommRecord> cs = new ArrayList<>(comms.size() + 16);
        comms.valuesTo(cs);
        List<EventRecord> es = new ArrayList<>(events.size() + 16);
        events.valuesTo(es);
        List<StreamRecord> ss = new ArrayList<>(streams.size() + 16);
        streams.valuesTo(ss);
        sortBySerial(cs);
        sortBySerial(ss);

        List<HandleView> commLeaks = new ArrayList<>(cs.size());
        for (CommRecord c : cs) {
            commLeaks.add(view(Kind.COMM, c, commDetails(c), 0));
        }
        EventLeaks eventLeaks = new EventLeaks(es.size());
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
        return new Snapshot(commLeaks, eventLeaks.views, streamLeaks, commsCreated.get(), commsReleased.get(),
                cs.size(), es.size(), ss.size(), internalErrors.get(), firstInternalError);
    }

    /**
     * Every communicator seen, released ones (the newest {@value #RELEASED_COMMS_KEPT}) and live
     * ones, in the order of their creation.
     */
    public List<CommLife> communicators() {
        List<CommRecord> live = new ArrayList<>();
        comms.valuesTo(live);
        List<CommLife> all = released.list();
        for (CommRecord c : live) {
            all.add(CommLife.of(c, 0, null));
        }
        all.sort(BY_CREATION);
        return all;
    }

    /** Released communicators left out of {@link #communicators()} to bound memory. */
    public long communicatorsOmitted() {
        return released.dropped();
    }

    // --- communicators ---

    private void commCreated(NativeFunction fn, CallArgs args, String bridge, NativeAccess access) {
        long h = args.handleOut(fn.handle());
        if (h == 0) {
            return;
        }
        // InitRankScalable's argument points at its first id: every rank passes the same ids
        byte[] id = args.bytes(fn.uniqueId(), UNIQUE_ID_BYTES);
        boolean hasId = id != null && id.length == UNIQUE_ID_BYTES;
        addComm(new CommRecord(h, serials.incrementAndGet(), fn.symbol(), bridge, threadName(),
                clock.getAsLong(), stack(), currentDevice(), access, rankOrUnknown(args, fn.rank()),
                rankOrUnknown(args, fn.nranks()), hasId, hasId ? CommIds.ofUniqueId(id) : 0, false, 0));
    }

    /** ncclCommInitAll: one communicator per devlist entry (device i when devlist is null). */
    private void cliqueCreated(NativeFunction fn, CallArgs args, String bridge, NativeAccess access) {
        int ndev = args.intArg(fn.nranks());
        if (ndev <= 0 || ndev > MAX_INIT_ALL_DEVICES) {
            return;
        }
        long commId = CommIds.fresh();
        String thread = threadName();
        long now = clock.getAsLong();
        Throwable creation = stack();
        for (int i = 0; i < ndev; i++) {
            long h = args.handleOut(fn.handle(), i);
            if (h != 0) {
                int device = args.intArray(fn.device(), i, i);
                addComm(new CommRecord(h, serials.incrementAndGet(), fn.symbol(), bridge, thread, now,
                        creation, device, access, i, ndev, true, commId, false, 0));
            }
        }
    }

    /** ncclCommSplit and ncclCommShrink: a child whose identity derives from its parent's. */
    private void childCreated(NativeFunction fn, CallArgs args, String bridge, NativeAccess access) {
        boolean split = fn.effect() == Effect.COMM_SPLIT;
        CommRecord parent = comms.get(args.handle(fn.parentComm()));
        // counted also on a rank that gets no child (NCCL_SPLIT_NOCOLOR), so that the n-th split
        // of a parent is the same split on every rank
        int nth = parent == null ? 0 : split ? parent.nextSplit() : parent.nextShrink();
        long h = args.handleOut(fn.handle());
        if (h == 0) {
            return;
        }
        boolean hasId = parent != null && parent.hasCommId;
        long commId = 0;
        int rank = CommRecord.UNKNOWN;
        int nranks = CommRecord.UNKNOWN;
        if (split) {
            if (hasId) {
                commId = CommIds.ofSplit(parent.commId, args.intArg(fn.color()), nth);
            }
        } else {
            if (hasId) {
                commId = CommIds.ofShrink(parent.commId, nth);
            }
            if (parent != null && parent.rank >= 0 && parent.nranks > 0) {
                int excluded = args.intArg(fn.count());
                int below = excludedBelow(args, fn.rankList(), excluded, parent.rank, parent.nranks);
                if (below >= 0) {
                    // NCCL renumbers the survivors in order, closing the gaps of the excluded ranks
                    rank = parent.rank - below;
                    nranks = parent.nranks - excluded;
                }
            }
        }
        int device = parent != null ? parent.device : currentDevice();
        addComm(new CommRecord(h, serials.incrementAndGet(), fn.symbol(), bridge, threadName(),
                clock.getAsLong(), stack(), device, access, rank, nranks, hasId, commId,
                hasId, hasId ? parent.commId : 0));
    }

    /** How many excluded ranks are below {@code rank}, or -1 if the list cannot be read. */
    private static int excludedBelow(CallArgs args, int list, int count, int rank, int nranks) {
        if (count < 0 || count >= nranks || count > MAX_EXCLUDED_RANKS) {
            return -1;
        }
        int below = 0;
        for (int i = 0; i < count; i++) {
            int r = args.intArray(list, i, -1);
            if (r < 0 || r >= nranks || r == rank) {
                return -1;
            }
            if (r < rank) {
                below++;
            }
        }
        return below;
    }

    /** A create at an address we still hold means its release was not seen yet: count it now. */
    private void addComm(CommRecord c) {
        commsCreated.incrementAndGet();
        if (comms.put(c.handle, c) != null) {
            commsReleased.incrementAndGet();
        }
        try {
            listener.communicatorCreated(c.handle, c.api, c.bridge, c.rank, c.nranks, c.device,
                    c.hasCommId ? CommIds.hex(c.commId) : null);
        } catch (RuntimeException e) {
            internalError(e); // one listener failure must not lose the other communicators of an InitAll
        }
    }

    /** The first tracked call; {@code synchronized} so that the listener hears of it once. */
    private synchronized void firstCall() {
        if (!sawAnyCall) {
            sawAnyCall = true;
            try {
                listener.firstCall();
            } catch (RuntimeException e) {
                internalError(e);
            }
        }
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
    private final class EventLeaks {
        final List<HandleView> views;
        private StreamRecord lastStream;
        private int lastDevice;
        private Details lastDetails;
        private long lastRecordedOn;

        EventLeaks(int live) {
            views = new ArrayList<>(live);
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
                lastRecordedOn = on != null && !isSpecialStream(on.handle) && streams.get(on.handle) == on ? on.handle : 0;
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
        return Details.copyOf(details);
    }

    // --- events and streams ---

    /**
     * The outermost ncclGroupEnd launches the group's work, so it is counted now: an event
     * recorded inside the group comes before it on the stream. A failed end launched nothing.
     */
    private void groupEnded(int status) {
        ThreadState thread = threads.get();
        if (thread.groupDepth == 0 || --thread.groupDepth > 0) {
            return;
        }
        threadsInGroups.decrementAndGet();
        if (succeededOrInProgress(status)) {
            for (int i = 0; i < thread.groupedCount(); i++) {
                thread.grouped(i).enqueue(opSeq.get());
            }
        }
        thread.clearGrouped();
    }

    /**
     * The stream work goes to; a stream not created under observation (the special streams, or
     * one created before the agent came) becomes known here, with the enqueuing call as its api.
     */
    private StreamRecord streamForWork(Object found, NativeFunction fn, long handle, long stream, String bridge,
            NativeAccess access) {
        // found before the call and still the stream's record: what the lookup below would find.
        // Not read: it was current when the bridge asked, so it ended since, as after a lookup.
        if (found instanceof StreamRecord s && (!s.ended() || stream == NOT_READ)) {
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
        StreamRecord fresh = new StreamRecord(stream, serials.incrementAndGet(), fn.symbol(), bridge,
                threadName(), clock.getAsLong(), sharedStack(), device, access, opSeq);
        StreamRecord raced = streams.putIfAbsent(key, fresh);
        return raced != null ? raced : fresh;
    }

    /** A collective runs on its communicator's device; other work on the thread's current one. */
    private int workDevice(NativeFunction fn, long comm) {
        if (fn.effect() == Effect.COMM_ENQUEUE) {
            CommRecord c = comms.get(comm);
            if (c != null) {
                return c.device;
            }
        }
        return currentDevice();
    }

    /** The thread's current device is looked up only for the special streams, which need it. */
    private long streamKey(long handle) {
        return isSpecialStream(handle) ? specialStreamKey(handle, currentDevice()) : handle;
    }

    private static boolean isSpecialStream(long handle) {
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

    // --- helpers ---

    private int currentDevice() {
        return threads.get().device;
    }

    private static boolean succeededOrInProgress(int status) {
        return status == NCCL_SUCCESS || status == NCCL_IN_PROGRESS;
    }

    private static int rankOrUnknown(CallArgs args, int index) {
        if (index < 0) {
            return CommRecord.UNKNOWN;
        }
        int v = args.intArg(index);
        return v >= 0 ? v : CommRecord.UNKNOWN;
    }

    private static long serialOf(Tracked t) {
        return t == null ? 0 : t.serial;
    }

    /** The release's token (the record's serial), or {@link #CLAIMED_BY_CLEANUP}. */
    private static long releaseEnter(Tracked t) {
        if (t == null) {
            return 0;
        }
        return t.enterRelease() ? t.serial : CLAIMED_BY_CLEANUP;
    }

    /**
     * A release that failed leaves its handle live, and claimable again. ncclInProgress is no
     * failure: a nonblocking communicator's release goes on inside NCCL.
     */
    private void releaseFailedIfSo(NativeFunction fn, CallArgs args, int status, long token) {
        Effect effect = fn.effect();
        boolean comm = effect == Effect.COMM_DESTROY || effect == Effect.COMM_ABORT;
        if ((!comm && effect != Effect.EVENT_DESTROY) || status == 0 || token == 0 || token == CLAIMED_BY_CLEANUP
                || (comm && status == NCCL_IN_PROGRESS)) {
            return;
        }
        Tracked t = comm ? comms.get(args.handle(fn.handle())) : events.get(args.handle(fn.handle()));
        if (t != null && t.serial == token) {
            t.releaseFailed();
        }
    }

    /** A communicator's: few are made, each costing milliseconds on a GPU, so none is shared. */
    private Throwable stack() {
        return stacks ? new Throwable("creation stack") : null;
    }

    /**
     * An event's or a stream's, which applications make in loops: events made at one place share
     * one (about 0.1 µs more per creation; a leaked loop's 100,000 events then hold one stack,
     * not 70 MB of them).
     * Captured here, so that its frames are those of {@link #stack()}.
     */
    private Throwable sharedStack() {
        return stacks ? creationStacks.share(new Throwable("creation stack")) : null;
    }

    private static String threadName() {
        return Thread.currentThread().getName();
    }

    private static String hex(long handle) {
        return "0x" + Long.toHexString(handle);
    }

    private static HandleView view(Kind kind, Tracked t, Details details, long recordedOn) {
        return new HandleView(kind, t.handle, t.api, t.bridge, t.thread, t.createdAtMillis, t.creation,
                t.device, details, t.access, t, recordedOn);
    }

    private void internalError(RuntimeException e) {
        if (internalErrors.getAndIncrement() == 0) {
            firstInternalError = e;
        }
    }
}
