package dev.ncclguard.track;

import dev.ncclguard.catalog.Change;
import dev.ncclguard.catalog.NativeFunction;
import dev.ncclguard.catalog.Status;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * Live communicators, events and streams, fed by the bridges around each native call:
 * {@link #enter} before it, {@link #exit} after it with the C status; or, for the calls of the hot
 * path ({@link Change#onHandles}), {@link #find} and {@link #token} before it and the exit with
 * what they returned. Only successful calls change state. Thread-safe; no lock is held across a
 * native call, and the calls of the hot path (event records and queries, collectives) allocate
 * nothing.
 *
 * <p>This class is the protocol and the one place that says what each {@link Change} does; the
 * state lives in its parts: {@link Communicators}, {@link Streams} (streams, events and the work
 * counted on them) and {@link Snapshots} (what a snapshot shows of them).
 *
 * <p>A release's {@code enter} returns the serial of the record it would end, and its
 * {@code exit} ends that record only: when the address was handed out again in between, the new
 * record survives.
 */
public final class Tracker {
    /**
     * What {@link #enter} returns for a release of a handle that the exit-time cleanup has claimed:
     * the bridge must not let the call reach the library (it parks the thread: this happens only
     * while the JVM exits, after the application's shutdown hooks).
     */
    public static final long CLAIMED_BY_CLEANUP = Long.MIN_VALUE;
    /** What a bridge passes for a handle it did not decode, {@link #exitReadsHandles} having said so. */
    public static final long NOT_READ = Long.MIN_VALUE;
    /** The token of a stream call whose stream was not known at enter: it covers no work. */
    private static final long NO_TOKEN = -1;

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
    private volatile NativeSlots nativeSlots;
    private volatile NcclProfiler ncclProfiler;
    private final long startedAtMillis;

    private final Communicators comms = new Communicators(this);
    private final NativeCreations nativeCreations = new NativeCreations(this);
    private final Streams work = new Streams(this);
    /** NCCL's memory, registrations, windows and device communicators: made at the first such call, so premain loads none of it. */
    private volatile Resources resources;
    private final Object resourcesLock = new Object();

    private final AtomicLong serials = new AtomicLong();
    private final AtomicLong internalErrors = new AtomicLong();
    /** Made at the first event or stream created with stacks on: a JVM that makes none never loads it. */
    private volatile CreationStacks creationStacks;
    /** The depot's bound (option stack-depot); a change makes a new depot at the next creation. */
    private volatile int stackDepot = CreationStacks.DEFAULT_MAX;
    private volatile Throwable firstInternalError;
    private volatile Gauges gauges;
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

    /**
     * At most {@code max} distinct creating stacks of live events and streams are kept (option
     * stack-depot, which bounds the native part's depot too); 0: no bound.
     */
    public void stackDepot(long max) {
        int bound = max <= 0 || max > Integer.MAX_VALUE ? Integer.MAX_VALUE : (int) max;
        if (bound != stackDepot) {
            synchronized (this) {
                stackDepot = bound;
                creationStacks = null;
            }
        }
    }

    /** Record the creating stack of handles created from now on, or not. */
    public void stacks(boolean stacks) {
        this.stacks = stacks;
    }

    /** Whether any tracked NCCL or CUDA call has returned since the tracker started. */
    public boolean sawAnyCall() {
        return sawAnyCall;
    }

    // --- the protocol: what each change does, before and after the call ---

    /**
     * Before the native call: returns the token its {@link #exit} needs (the record a release would
     * end, the event record or stream count a query or synchronize would cover).
     */
    public long enter(NativeFunction fn, CallArgs args) {
        if (fn == null || args == null) {
            return 0;
        }
        try {
            Change change = fn.change();
            if (change.onHandles()) {
                return token(fn, find(fn, args.handle(fn.handle()), args.handle(fn.stream())));
            }
            switch (change) {
                case NEW_COMMUNICATOR, NEW_CLIQUE, SPLIT_COMMUNICATOR, SHRINK_COMMUNICATOR, GROW_COMMUNICATOR:
                    creationStarted();
                    return 0;
                case RELEASE_COMMUNICATOR:
                    return comms.enterRelease(args.handle(fn.handle()));
                case RELEASE_EVENT:
                    return work.enterEventRelease(args.handle(fn.handle()));
                case RELEASE_STREAM:
                    return work.enterStreamRelease(args.handle(fn.stream()));
                case SYNCHRONIZE_DEVICE:
                    return work.deviceSyncStarts(!args.fromNativeCode());
                case RELEASE_MEMORY:
                    return resources().enterMemoryRelease(args.handle(fn.handle()));
                case RELEASE_DEVICE_COMMUNICATOR:
                    return resources().enterDevCommRelease(fn, args);
                default:
                    return 0;
            }
        } catch (RuntimeException e) {
            internalError(e);
            return 0;
        }
    }

    /**
     * Before a call of an {@link Change#onHandles} function: the record it acts on (its event, or
     * the stream its work goes to), or null. The bridge hands it to {@link #token} and to the exit,
     * so that a call looks its record up once.
     *
     * @param handle the argument at {@code fn.handle()}, 0 if none
     * @param stream the argument at {@code fn.stream()}, 0 if none
     */
    public Object find(NativeFunction fn, long handle, long stream) {
        try {
            switch (fn.change()) {
                case COMPLETE_EVENT:
                    return work.event(handle);
                case COMPLETE_STREAM:
                case RECORD_EVENT:
                case ENQUEUE_WAIT:
                    return work.stream(stream);
                case ENQUEUE_COLLECTIVE:
                    return work.collectiveStream(stream);
                default:
                    return null;
            }
        } catch (RuntimeException e) {
            internalError(e);
            return null;
        }
    }

    /** Before the call, after {@link #find}: the token its exit needs, as {@link #enter} returns it. */
    public long token(NativeFunction fn, Object found) {
        switch (fn.change()) {
            case COMPLETE_EVENT:
                if (found instanceof EventRecord e) {
                    int slot = e.nativeSlot;
                    return slot < 0 ? e.lastRecordSeq() : nativeToken(fn, slot);
                }
                return 0;
            case COMPLETE_STREAM:
            case RECORD_EVENT:
                if (found instanceof StreamRecord s) {
                    int slot = s.nativeSlot;
                    return slot < 0 ? s.enqueued() : nativeToken(fn, slot);
                }
                return NO_TOKEN;
            default:
                return 0;
        }
    }

    /** A Java bridge's hot call on a handle whose state is in a C slot (mixed use: rare). */
    private long nativeToken(NativeFunction fn, int slot) {
        NativeSlots n = nativeSlots;
        return n == null ? 0 : n.token(fn.id(), slot);
    }

    /**
     * Whether the exit of an {@link Change#onHandles} call that found {@code found} reads its
     * handle, its stream or its access (when it may create a stream record). A query or
     * synchronize does not, nor does work on a stream whose record was found and is still current:
     * a bridge may pass {@link #NOT_READ} and a null access then. Asked once, right before the exit.
     */
    public static boolean exitReadsHandles(NativeFunction fn, Object found) {
        switch (fn.change()) {
            case COMPLETE_EVENT:
            case COMPLETE_STREAM:
                return false;
            case ENQUEUE_COLLECTIVE:
            case ENQUEUE_WAIT:
                return !(found instanceof StreamRecord s && !s.ended());
            default:
                return true;
        }
    }

    /**
     * After the native call returned {@code status}: applies what a successful call did.
     *
     * @param token  what {@link #enter} returned for this call
     * @param bridge the bridge that saw the call, for the report
     * @param access the library instance the call went to, kept with handles it creates
     */
    public void exit(NativeFunction fn, CallArgs args, int status, long token, String bridge, NativeAccess access) {
        exit(fn, args, status, token, bridge, access, null);
    }

    /**
     * Whether a successful call of {@code fn} is to hand {@link #exit} the creating stack it
     * captured: an event's or a stream's, with stacks on. A bridge that captures it itself, in its
     * own frame, spares the VM's walk the tracker's frames below it (docs/performance.md,
     * "Creations through the Java bridges").
     */
    public boolean capturesStack(NativeFunction fn) {
        Change c = fn.change();
        return stacks && (c == Change.NEW_EVENT || c == Change.NEW_STREAM);
    }

    /**
     * {@link #exit(NativeFunction, CallArgs, int, long, String, NativeAccess)} with the creating
     * stack the bridge captured where {@link #capturesStack} says so (null: captured here if needed).
     */
    public void exit(NativeFunction fn, CallArgs args, int status, long token, String bridge, NativeAccess access,
            Throwable stack) {
        if (fn == null || args == null) {
            return;
        }
        if (!sawAnyCall) {
            firstCall();
        }
        try {
            if (fn.change().onHandles()) {
                long handle = args.handle(fn.handle());
                long stream = args.handle(fn.stream());
                changedOnHandles(fn, status == 0 ? find(fn, handle, stream) : null, handle, stream, status, token,
                        bridge, access);
            } else {
                changed(fn, args, status, token, bridge, access, stack);
            }
        } catch (RuntimeException e) {
            internalError(e);
        } finally {
            if (creates(fn.change())) {
                creationEnded(); // after the claim: the plugin's records of the call are the bridge's now
            }
        }
    }

    private static boolean creates(Change change) {
        switch (change) {
            case NEW_COMMUNICATOR, NEW_CLIQUE, SPLIT_COMMUNICATOR, SHRINK_COMMUNICATOR, GROW_COMMUNICATOR:
                return true;
            default:
                return false;
        }
    }

    /** A bridge's creation begins: NCCL's profiler plugin keeps what it inits meanwhile for its claim. */
    private void creationStarted() {
        NcclProfiler p = ncclProfiler;
        if (p != null) {
            try {
                p.creationStarted();
            } catch (RuntimeException e) {
                internalError(e);
            }
        }
    }

    private void creationEnded() {
        NcclProfiler p = ncclProfiler;
        if (p != null) {
            try {
                p.creationEnded();
            } catch (RuntimeException e) {
                internalError(e);
            }
        }
    }

    /**
     * After the native call of an {@link Change#onHandles} function returned {@code status}: what
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
            changedOnHandles(fn, found, handle, stream, status, token, bridge, access);
        } catch (RuntimeException e) {
            internalError(e);
        }
    }

    /** What a call of the hot path changed: its record found before the call, its handles as decoded. */
    private void changedOnHandles(NativeFunction fn, Object found, long handle, long stream, int status, long token,
            String bridge, NativeAccess access) {
        // a query's cudaErrorNotReady, like any error, changes nothing
        if (status != 0) {
            return;
        }
        switch (fn.change()) {
            case COMPLETE_EVENT, COMPLETE_STREAM -> {
                int slot = found instanceof Tracked t ? t.nativeSlot : Tracked.NO_SLOT;
                if (slot >= 0) {
                    if (!((Tracked) found).ended() && nativeSlots != null) {
                        nativeSlots.exit(fn.id(), slot, 0, status, token);
                    }
                } else if (fn.change() == Change.COMPLETE_EVENT) {
                    Streams.eventCompleted(found, token);
                } else {
                    Streams.streamCompleted(found, token);
                }
            }
            case RECORD_EVENT -> work.recorded(fn, found, handle, stream, token, bridge, access);
            case ENQUEUE_COLLECTIVE -> work.collective(fn, found, handle, stream, bridge, access);
            case ENQUEUE_WAIT -> work.waited(fn, found, handle, stream, bridge, access);
            default -> {
            }
        }
    }

    /** What any other call changed, read from its decoded arguments. */
    private void changed(NativeFunction fn, CallArgs args, int status, long token, String bridge,
            NativeAccess access, Throwable stack) {
        switch (fn.change()) {
            case NEW_COMMUNICATOR -> {
                if (succeededOrInProgress(status)) {
                    comms.created(fn, args, bridge, access);
                }
            }
            case NEW_CLIQUE -> {
                if (succeededOrInProgress(status)) {
                    comms.cliqueCreated(fn, args, bridge, access);
                }
            }
            case SPLIT_COMMUNICATOR, SHRINK_COMMUNICATOR -> {
                if (succeededOrInProgress(status)) {
                    comms.childCreated(fn, args, bridge, access);
                }
            }
            case FINALIZE_COMMUNICATOR -> {
                // a nonblocking communicator's finalize returns ncclInProgress as its success
                if (succeededOrInProgress(status)) {
                    comms.finalized(args.handle(fn.handle()));
                }
            }
            case RELEASE_COMMUNICATOR -> comms.released(fn, args.handle(fn.handle()), status, token, bridge);
            case NEW_EVENT -> {
                if (status == 0) {
                    work.eventCreated(fn, args, bridge, access, stack);
                }
            }
            case RELEASE_EVENT -> work.eventReleased(args.handle(fn.handle()), status, token);
            case NEW_STREAM -> {
                if (status == 0) {
                    work.streamCreated(fn, args, bridge, access, stack);
                }
            }
            case RELEASE_STREAM -> {
                if (status == 0) {
                    work.streamReleased(args.handle(fn.stream()), token);
                }
            }
            case SYNCHRONIZE_DEVICE -> {
                if (status == 0) {
                    work.deviceSynchronized(token, !args.fromNativeCode());
                }
            }
            case SET_DEVICE -> {
                if (status == 0) {
                    thread().device = args.intArg(fn.device());
                }
            }
            case OPEN_GROUP -> {
                if (status == 0) {
                    work.groupOpened();
                }
            }
            case CLOSE_GROUP -> work.groupClosed(status);
            case GROW_COMMUNICATOR -> {
                if (succeededOrInProgress(status)) {
                    comms.grown(fn, args, bridge, access);
                }
            }
            case REVOKE_COMMUNICATOR -> {
                // a nonblocking revoke returns ncclInProgress and goes on inside NCCL
                if (succeededOrInProgress(status)) {
                    comms.revoked(args.handle(fn.handle()));
                }
            }
            case NEW_MEMORY -> {
                if (status == 0) {
                    resources().memoryAllocated(fn, args, bridge, access);
                }
            }
            case RELEASE_MEMORY -> resources().memoryReleased(args.handle(fn.handle()), status, token);
            case REGISTER_BUFFER, REGISTER_WINDOW -> {
                if (status == 0) {
                    resources().registered(fn, args, fn.change() == Change.REGISTER_WINDOW);
                }
            }
            case DEREGISTER_BUFFER, DEREGISTER_WINDOW -> {
                if (status == 0) {
                    resources().deregistered(fn, args, fn.change() == Change.DEREGISTER_WINDOW);
                }
            }
            case NEW_DEVICE_COMMUNICATOR -> {
                if (status == 0) {
                    resources().devCommCreated(fn, args, bridge, access);
                }
            }
            case RELEASE_DEVICE_COMMUNICATOR -> resources().devCommReleased(fn, args, status, token);
            case COMPLETE_EVENT, COMPLETE_STREAM, RECORD_EVENT, ENQUEUE_COLLECTIVE, ENQUEUE_WAIT -> {
                // on their handles: changedOnHandles
            }
        }
    }

    // --- the native part: C slots, native work, NCCL's profiler plugin ---

    /** Where the hot state of handles native code uses lives; null (the default) without the native part. */
    public void nativeSlots(NativeSlots slots) {
        this.nativeSlots = slots;
    }

    NativeSlots nativeSlots() {
        return nativeSlots;
    }

    /** NCCL's profiler plugin, for the communicators only NCCL sees; null (the default) without it. */
    public void ncclProfiler(NcclProfiler profiler) {
        this.ncclProfiler = profiler;
    }

    public NcclProfiler ncclProfiler() {
        return ncclProfiler;
    }

    /**
     * The calling thread's device, as the CUDA runtime says it is (the interposer reads it with
     * each call): native code may have set it before any bridge saw a cudaSetDevice.
     */
    public void threadDevice(int device) {
        if (device >= 0) {
            threads.get().device = device;
        }
    }

    /**
     * Native work met a handle whose hot state C keeps in {@code slot} from now on: a stream it
     * used first (a record is made, as for work on any unknown stream), or an event whose state
     * moved to C. Returns whether a record holds the slot.
     */
    public boolean seenByNative(NativeFunction fn, long handle, int device, int slot, String bridge,
            NativeAccess access) {
        if (!sawAnyCall) {
            firstCall();
        }
        try {
            return work.seenByNative(fn, handle, device, slot, bridge, access);
        } catch (RuntimeException e) {
            internalError(e);
            return false;
        }
    }

    /**
     * After an event's creation in native code whose record holds its C slot: that creation's
     * stack (depot id {@code stack}) and thread ({@code thread}) are known now, and later creations
     * with both make no upcall ({@link NativeCreations}).
     */
    public void nativeStackLearned(long handle, int stack, int thread) {
        try {
            EventRecord e = work.events.get(handle);
            if (e != null) {
                nativeCreations.learned(stack, thread, e);
            }
        } catch (RuntimeException e) {
            internalError(e);
        }
    }

    /**
     * The creating stack learned for native depot id {@code stack} (its first record's, the same
     * frames), or null: none learned, or stacks are off.
     */
    public Throwable learnedNativeStack(int stack) {
        try {
            return nativeCreations.learnedStack(stack);
        } catch (RuntimeException e) {
            internalError(e);
            return null;
        }
    }

    /** The events native code made with no upcall become records, before a look at all events. */
    private void adoptNative() {
        if (nativeCreations.any()) {
            try {
                nativeCreations.adoptAll(work, nativeSlots);
            } catch (RuntimeException e) {
                internalError(e);
            }
        }
    }

    /**
     * Classes are about to be redefined or retransformed (a hot swap, another agent's
     * instrumentation): a frame's line may move. A Throwable whose frames are resolved after its
     * class was redefined reads "Unknown Source" for them (HotSpot names a frame of an older class
     * version so), and the native depot keeps frames as a method and a bytecode index, named when
     * the tracker takes an event over. So the creating stacks live records hold are resolved now,
     * the events native code made with no upcall are taken over now, both read by the classes as
     * they still are, and the names made of depot stacks so far are dropped, so that later events
     * are named by the classes as they will be. One redefinition of many classes calls this once a
     * class: what was done for the first is not done again unless something was made since.
     */
    public void classesRedefining() {
        if (!stacks) {
            return;
        }
        adoptNative();
        try {
            NativeSlots n = nativeSlots;
            if (n != null && nativeCreations.any()) {
                nativeCreations.forgetStacks();
                n.forgetNames();
            }
            long made = serials.get();
            if (made != stacksResolvedAt) {
                stacksResolvedAt = made;
                LiveStacks.resolve(work, comms, resources);
            }
        } catch (RuntimeException e) {
            internalError(e);
        }
    }

    /** The record serial up to which live creating stacks were resolved (classesRedefining). */
    private volatile long stacksResolvedAt;

    /** A Java look-up of an event the tracker has no record of: one native code made with no upcall, or null. */
    EventRecord adoptedEvent(long handle) {
        if (!nativeCreations.any()) {
            return null;
        }
        try {
            return nativeCreations.adoptOne(work, nativeSlots, handle);
        } catch (RuntimeException e) {
            internalError(e);
            return null;
        }
    }

    /** Events native code made and released with no upcall (never adopted): made, released. */
    public long[] unadoptedEventCounts() {
        long[] out = new long[2];
        NativeSlots n = nativeSlots;
        if (n != null && nativeCreations.any()) {
            n.unadoptedCounts(out);
        }
        return out;
    }

    /** Whether the record of the event or stream {@code handle} holds C slot {@code slot}, after its creation. */
    public boolean holdsSlot(long handle, int slot) {
        try {
            return work.holds(handle, slot);
        } catch (RuntimeException e) {
            internalError(e);
            return false;
        }
    }

    /**
     * Operations NCCL's profiler plugin says are in flight now on a leaked communicator of a
     * snapshot; 0 for any other view, or without the plugin. For cleanup, which waits for them.
     */
    public long inFlightNow(HandleView comm) {
        NcclProfiler p = ncclProfiler;
        if (p == null || !(comm.claim() instanceof CommRecord c) || c.profilerRecord == 0) {
            return 0;
        }
        try {
            return p.inFlight(c.profilerRecord);
        } catch (RuntimeException e) {
            internalError(e);
            return 0;
        }
    }

    // --- what the tracker knows ---

    private Resources resources() {
        Resources r = resources;
        if (r == null) {
            synchronized (resourcesLock) {
                r = resources;
                if (r == null) {
                    r = new Resources(this);
                    resources = r;
                }
            }
        }
        return r;
    }

    /** The leaks and counters now; consistent per handle while other threads keep calling. */
    public Snapshot snapshot() {
        adoptNative();
        return Snapshots.of(this, comms, work, resources());
    }

    /** What live communicators hold and the memory alive now, for the live view; cheaper than a snapshot. */
    public ResourceCounts resourceCounts() {
        return Snapshots.resourceCounts(comms, resources());
    }

    /**
     * Every communicator seen, released ones (the newest {@value Communicators#RELEASED_COMMS_KEPT})
     * and live ones, in the order of their creation.
     */
    public List<CommLife> communicators() {
        List<CommLife> onlyNccl = List.of();
        NcclProfiler p = ncclProfiler;
        if (p != null) {
            try {
                onlyNccl = p.unclaimedLives(); // alive ones: the plugin does not say when a finalized one ended
            } catch (RuntimeException e) {
                internalError(e);
            }
        }
        return comms.communicators(onlyNccl);
    }

    /** Released communicators left out of {@link #communicators()} to bound memory. */
    public long communicatorsOmitted() {
        return comms.omitted();
    }

    // --- the live gauges: counts read as they are, without a snapshot of every handle ---

    public int liveCommunicators() {
        return comms.records.size();
    }

    public int liveEvents() {
        NativeSlots n = nativeSlots;
        long unadopted = n != null && nativeCreations.any() ? n.unadoptedEvents() : 0;
        return (int) Math.min(Integer.MAX_VALUE, work.events.size() + unadopted);
    }

    public int liveStreams() {
        return work.streams.size();
    }

    public long communicatorsCreated() {
        return comms.createdCount();
    }

    public long communicatorsReleased() {
        return comms.releasedCount();
    }

    /** Creation time (epoch ms) of the oldest communicator alive now; 0 when none is. */
    public long oldestLiveCommunicatorMillis() {
        return gauges().oldestLiveCommunicatorMillis();
    }

    /** Ops enqueued on live streams and not seen complete, summed. */
    public long streamOpsPending() {
        return gauges().streamOpsPending();
    }

    /**
     * Events whose last record has been seen pending for {@code thresholdMillis} or more, by this
     * and earlier calls (the first call that sees a record pending starts its clock).
     */
    public int eventsPendingLongerThan(long thresholdMillis) {
        adoptNative();
        return gauges().eventsPendingLongerThan(thresholdMillis, now());
    }

    /**
     * Where NCCL's own count of operations in flight comes from: the profiler bridge sets it once
     * it hears from NCCL's profiler plugin (bridge.profiler).
     */
    public void inFlightSource(java.util.function.LongSupplier source) {
        gauges().inFlightSource(source);
    }

    /** NCCL's operations in flight as its profiler plugin counts them; -1 while nothing reports them. */
    public long opsInFlight() {
        return gauges().opsInFlight();
    }

    /** Made at the first reading: premain and the hot path never load it. */
    private Gauges gauges() {
        Gauges g = gauges;
        if (g == null) {
            synchronized (this) {
                g = gauges;
                if (g == null) {
                    g = new Gauges(comms, work);
                    gauges = g;
                }
            }
        }
        return g;
    }

    // --- for the parts ---

    CommRecord communicator(long handle) {
        return comms.get(handle);
    }

    TrackerListener listener() {
        return listener;
    }

    long nextSerial() {
        return serials.incrementAndGet();
    }

    long now() {
        return clock.getAsLong();
    }

    ThreadState thread() {
        return threads.get();
    }

    int currentDevice() {
        return threads.get().device;
    }

    /** Whether creating stacks are recorded (option stacks). */
    boolean stacksOn() {
        return stacks;
    }

    /** A communicator's: few are made, each costing milliseconds on a GPU, so none is shared. */
    Throwable stack() {
        return stacks ? new Throwable("creation stack") : null;
    }

    /**
     * An event's or a stream's, which applications make in loops: events made at one place share
     * one (its cost and saving: docs/performance.md, "stacks=on: one creating stack per place").
     */
    Throwable sharedStack() {
        return stacks ? creationStacks().share(new Throwable("creation stack")) : null;
    }

    /** {@code captured} (a bridge's, see {@link #capturesStack}) as the depot keeps it; else as {@link #sharedStack}. */
    Throwable sharedStack(Throwable captured) {
        return captured != null ? creationStacks().share(captured) : sharedStack();
    }

    CreationStacks creationStacks() {
        CreationStacks c = creationStacks;
        if (c == null) {
            synchronized (this) {
                c = creationStacks;
                if (c == null) {
                    c = new CreationStacks(stackDepot, each -> {
                        work.events.forEach(e -> each.accept(e.creation));
                        work.streams.forEach(s -> each.accept(s.creation));
                    });
                    creationStacks = c;
                }
            }
        }
        return c;
    }

    static String threadName() {
        return Thread.currentThread().getName();
    }

    static boolean succeededOrInProgress(int status) {
        return status == Status.NCCL_SUCCESS || status == Status.NCCL_IN_PROGRESS;
    }

    long internalErrors() {
        return internalErrors.get();
    }

    Throwable firstInternalError() {
        return firstInternalError;
    }

    void internalError(RuntimeException e) {
        if (internalErrors.getAndIncrement() == 0) {
            firstInternalError = e;
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
}
