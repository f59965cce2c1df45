package dev.ncclguard.bridge.profiler;

import dev.ncclguard.bridge.interposer.Interposer;
import dev.ncclguard.bridge.interposer.NativePart;
import dev.ncclguard.catalog.DetailKeys;
import dev.ncclguard.catalog.Kind;
import dev.ncclguard.log.Log;
import dev.ncclguard.track.CommLife;
import dev.ncclguard.track.HandleView;
import dev.ncclguard.track.NativeAccess;
import dev.ncclguard.track.NcclProfiler;
import dev.ncclguard.track.ReleaseClaim;
import dev.ncclguard.track.Tracker;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;

/**
 * NCCL's own eye: the agent's native library loaded by NCCL as its profiler plugin
 * (NCCL_PROFILER_PLUGIN, set here at start in the process's C environment), which NCCL tells of
 * every communicator's init (inside the init call, on the initing thread), its finalize (inside
 * its destroy or abort), and the collectives and p2p operations started and finished on it.
 *
 * <p>A communicator a bridge saw created claims the plugin's record of it (one communicator, one
 * record); one no bridge saw (NCCL linked statically into a native library) is a communicator of
 * the plugin's alone, reported with bridge {@value #BRIDGE} when it is never finalized, with the
 * Java stack of the thread that inited it. An application's own NCCL_PROFILER_PLUGIN is loaded
 * behind ours and sees what it saw; {@code none} is respected.
 */
public final class ProfilerBridge implements NcclProfiler, Interposer.PluginInits, LongSupplier {
    public static final String BRIDGE = "nccl-profiler";
    public static final String PLUGIN_VARIABLE = "NCCL_PROFILER_PLUGIN";
    /** Where a process the agent did not start (a child of the application) finds the application's own plugin. */
    public static final String USER_PLUGIN_VARIABLE = "NCCLGUARD_USER_PROFILER_PLUGIN";
    /** What a communicator only the plugin saw is reported as created by: it does not say which init. */
    static final String API = "ncclCommInit";
    private static final int R = Interposer.PLUGIN_RECORD_LONGS;
    private static final long FINALIZED = 1;
    private static final long CLAIMED = 2;
    private static final long JAVA_THREAD = 4;

    private final Tracker tracker;
    private final boolean stacks;
    /** The plugin's records read so far, by id; guarded by this. */
    private final Map<Long, PluginRecord> records = new LinkedHashMap<>();
    private long cursor;
    /** The Java side of inits on Java threads, until their record is claimed. */
    private final Map<Long, InitSite> inits = new ConcurrentHashMap<>();
    private final NativeAccess notReleasable = new NotReleasable();
    /** The library's records, read and claimed: the native part, or a test's stand-in. */
    private final PluginView view;
    /**
     * Bridge creations in flight, by the kernel id of the thread making them (-1: unknown): the
     * last init sequence read when each began. Records inited since, on that thread or on one of
     * NCCL's, may be that creation's, whose claim has not come yet: not the plugin's alone while it
     * lasts. Guarded by this.
     */
    private final Map<Long, Long> creating = new HashMap<>();

    /** One communicator as NCCL told its plugin. */
    record PluginRecord(long id, long commId, int rank, int nranks, int nNodes, long initSeq, long initMillis,
            long flags, long tid) {
        boolean finalized() {
            return (flags & FINALIZED) != 0;
        }
    }

    /** The thread that inited a communicator, when it was a Java thread. */
    private record InitSite(String thread, Throwable stack) {
    }

    /** What the bridge reads and claims in the plugin's records: the native part's, or a test's. */
    interface PluginView {
        int initsSince(long seq, long[] out);

        int comms(long[] out);

        void claim(long record);

        int inFlight(long record, long[] out);

        String[] inFlightNames(long record);
    }

    /** The native part's records. */
    private static final class NativeView implements PluginView {
        @Override
        public int initsSince(long seq, long[] out) {
            return Interposer.pluginInitsSince(seq, out);
        }

        @Override
        public int comms(long[] out) {
            return Interposer.pluginComms(out);
        }

        @Override
        public void claim(long record) {
            Interposer.pluginClaim(record);
        }

        @Override
        public int inFlight(long record, long[] out) {
            return Interposer.inFlight(record, out);
        }

        @Override
        public String[] inFlightNames(long record) {
            return Interposer.inFlightNames(record);
        }
    }

    private ProfilerBridge(Tracker tracker, boolean stacks, PluginView view) {
        this.tracker = tracker;
        this.stacks = stacks;
        this.view = view;
    }

    /** A bridge over {@code view}, set as the tracker's profiler: for tests that replay interleavings. */
    static ProfilerBridge over(Tracker tracker, PluginView view) {
        ProfilerBridge bridge = new ProfilerBridge(tracker, false, view);
        tracker.ncclProfiler(bridge);
        return bridge;
    }

    /**
     * Points NCCL at the library as its profiler plugin, before any communicator exists, and
     * returns the bridge; null when the application set NCCL_PROFILER_PLUGIN=none (said in one line).
     */
    public static ProfilerBridge install(NativePart library, Tracker tracker, boolean stacks) {
        String original = System.getenv(PLUGIN_VARIABLE); // the process's environment as it started
        if (original != null && original.trim().equalsIgnoreCase("none")) {
            Log.info(PLUGIN_VARIABLE + "=none: NCCL loads no profiler plugin, so ncclguard does not see"
                    + " communicators of an NCCL linked into a native library, nor work still in flight at exit;"
                    + " unset it to let ncclguard see them");
            return null;
        }
        String user = original;
        if (user != null && user.endsWith("/libncclguard.so")) {
            // a parent's agent pointed NCCL at its own copy: the application's plugin is the one it kept
            user = System.getenv(USER_PLUGIN_VARIABLE);
        }
        if (user != null && user.isBlank()) {
            user = null;
        }
        if (!Interposer.userPlugin(user)) {
            Log.info("the application's profiler plugin " + PLUGIN_VARIABLE + "=" + user + " does not exist; NCCL"
                    + " would not load it either");
        }
        // children of the application inherit the C environment: their NCCL loads this library, which
        // finds the application's plugin in the variable
        if (user != null && !Interposer.setEnv(USER_PLUGIN_VARIABLE, user)) {
            Log.warn("cannot set " + USER_PLUGIN_VARIABLE + "; child processes that use NCCL may not load the"
                    + " application's profiler plugin");
        }
        if (!Interposer.setEnv(PLUGIN_VARIABLE, library.path().toString())) {
            Log.warn("cannot set " + PLUGIN_VARIABLE + " in the process environment: communicators only NCCL sees,"
                    + " and work in flight at exit, are not reported");
            return null;
        }
        ProfilerBridge bridge = new ProfilerBridge(tracker, stacks, new NativeView());
        Interposer.pluginInits(bridge);
        tracker.ncclProfiler(bridge);
        tracker.inFlightSource(bridge);
        return bridge;
    }

    // --- the plugin's init on a Java thread, inside the init call ---

    @Override
    public void inited(long record) {
        inits.put(record, new InitSite(Thread.currentThread().getName(),
                stacks ? new Throwable("creation stack") : null));
    }

    // --- what the tracker asks ---

    /** Reads the records inited since the last read. */
    private void poll() {
        long[] out = new long[R * 16];
        int total = view.initsSince(cursor, out);
        if (total * R > out.length) {
            out = new long[R * total + R * 16];
            total = Math.min(view.initsSince(cursor, out), out.length / R);
        }
        for (int i = 0; i < total; i++) {
            PluginRecord r = record(out, i);
            records.put(r.id(), r);
            cursor = Math.max(cursor, r.initSeq());
        }
    }

    private static PluginRecord record(long[] out, int i) {
        int o = i * R;
        return new PluginRecord(out[o], out[o + 1], (int) out[o + 2], (int) out[o + 3], (int) out[o + 4], out[o + 5],
                out[o + 6], out[o + 7], out[o + 8]);
    }

    @Override
    public synchronized long claim(boolean hasCommId, long commId, int rank, int nranks, long hint) {
        poll();
        long first = hint >= 0 ? hint >>> 32 : 0;
        long count = hint >= 0 ? hint & 0xffffffffL : 0;
        PluginRecord best = null;
        PluginRecord own = null;
        long tid = threadId();
        for (PluginRecord r : records.values()) {
            if ((r.flags() & CLAIMED) != 0 || (hint >= 0 && (r.id() < first || r.id() >= first + count))) {
                continue;
            }
            boolean sameRank = rank < 0 || r.rank() == rank;
            if (hasCommId ? r.commId() == commId && sameRank
                    : hint >= 0 ? sameRank && (nranks < 0 || r.nranks() == nranks)
                    : sameRank && r.tid() == tid && (nranks < 0 || r.nranks() == nranks)) {
                best = r; // the newest that fits
                if (tid >= 0 && r.tid() == tid) {
                    own = r;
                }
            }
        }
        if (own != null) {
            // a blocking init's record is inited on the calling thread: another's, of the same commId
            // and rank (one unique id for many communicators), would leave this one to that thread's
            // claim, a plugin-only leak until it comes
            best = own;
        }
        if (best == null && hasCommId && hint >= 0 && count == 1) {
            best = unclaimed(records.get(first)); // the call's one init, whatever the computed id said
        }
        if (best == null) {
            return 0;
        }
        take(best);
        return best.id();
    }

    @Override
    public synchronized long claimLate(long commId, int rank, int nranks) {
        // a nonblocking init's plugin init runs on a thread of NCCL's, after the call returned
        poll();
        for (PluginRecord r : records.values()) {
            // not a record a creation in flight will claim: one unique id for many communicators
            // would give it to the wrong one, and that creation's claim would find its own taken
            if ((r.flags() & CLAIMED) == 0 && r.commId() == commId && (rank < 0 || r.rank() == rank) && !pending(r)) {
                take(r);
                return r.id();
            }
        }
        return 0;
    }

    @Override
    public void creationStarted() {
        long tid = threadId();
        synchronized (this) {
            poll(); // every record inited from here on has a later sequence than cursor
            creating.put(tid, cursor);
        }
    }

    @Override
    public void creationEnded() {
        long tid = threadId();
        synchronized (this) {
            creating.remove(tid);
        }
    }

    /**
     * Whether {@code r} may be the record of a bridge's creation still in flight: inited after the
     * creation began, on its thread or on one of NCCL's (a non-Java thread: ncclCommInitAll's, a
     * nonblocking init's). Its claim comes when the call returns; until then it is nobody's leak,
     * as a Java record of a call still in flight is not one either.
     */
    private boolean pending(PluginRecord r) {
        for (Map.Entry<Long, Long> e : creating.entrySet()) {
            long tid = e.getKey();
            if (r.initSeq() > e.getValue() && (tid < 0 || tid == r.tid() || (r.flags() & JAVA_THREAD) == 0)) {
                return true;
            }
        }
        return false;
    }

    private PluginRecord unclaimed(PluginRecord r) {
        return r != null && (r.flags() & CLAIMED) == 0 ? r : null;
    }

    private void take(PluginRecord r) {
        records.put(r.id(), new PluginRecord(r.id(), r.commId(), r.rank(), r.nranks(), r.nNodes(), r.initSeq(),
                r.initMillis(), r.flags() | CLAIMED, r.tid()));
        view.claim(r.id());
        inits.remove(r.id());
    }

    @Override
    public synchronized long commId(long record) {
        PluginRecord r = records.get(record);
        if (r == null) {
            poll();
            r = records.get(record);
        }
        return r == null ? 0 : r.commId();
    }

    @Override
    public synchronized long cliqueCommId(int nranks, long hint, boolean[] found) {
        poll();
        long first = hint >= 0 ? hint >>> 32 : 0;
        long count = hint >= 0 ? hint & 0xffffffffL : 0;
        PluginRecord newest = null;
        for (PluginRecord r : records.values()) {
            if ((r.flags() & CLAIMED) == 0 && r.nranks() == nranks
                    && (hint < 0 || (r.id() >= first && r.id() < first + count))) {
                newest = r;
            }
        }
        found[0] = newest != null;
        return newest == null ? 0 : newest.commId();
    }

    @Override
    public long inFlight(long record) {
        long[] out = new long[Interposer.IN_FLIGHT_LONGS];
        return view.inFlight(record, out);
    }

    @Override
    public Map<String, Object> inFlightDetails(long record) {
        long[] out = new long[Interposer.IN_FLIGHT_LONGS];
        int total = view.inFlight(record, out);
        if (total <= 0) {
            return null;
        }
        String[] names = view.inFlightNames(record);
        return InFlight.details(out, names);
    }

    @Override
    public synchronized List<HandleView> unclaimed() {
        List<HandleView> views = new ArrayList<>();
        for (PluginRecord r : live()) {
            InitSite site = inits.get(r.id());
            String thread = site != null ? site.thread() : "tid " + r.tid();
            Map<String, Object> details = new LinkedHashMap<>();
            details.put(DetailKeys.RANK, r.rank());
            details.put(DetailKeys.NRANKS, r.nranks());
            details.put(DetailKeys.NNODES, r.nNodes());
            details.put(DetailKeys.COMM_ID, hex(r.commId()));
            Map<String, Object> inFlight = inFlightDetails(r.id());
            if (inFlight != null) {
                details.put(DetailKeys.IN_FLIGHT, inFlight);
            }
            views.add(new HandleView(Kind.COMM, 0, API, BRIDGE, thread, r.initMillis(),
                    site != null ? site.stack() : null, -1, details, notReleasable, ReleaseClaim.UNTRACKED));
        }
        return views;
    }

    @Override
    public synchronized List<CommLife> unclaimedLives() {
        List<CommLife> lives = new ArrayList<>();
        for (PluginRecord r : live()) {
            InitSite site = inits.get(r.id());
            lives.add(new CommLife(0, API, site != null ? site.thread() : "tid " + r.tid(), -1, r.rank(), r.nranks(),
                    hex(r.commId()), null, r.initMillis(), 0, null));
        }
        return lives;
    }

    @Override
    public synchronized long[] unclaimedCounts() {
        long[] out = new long[R * Math.max(16, records.size() + 16)];
        int total = view.initsSince(0, out);
        if (total * R > out.length) {
            out = new long[R * total + R * 16];
            total = Math.min(view.initsSince(0, out), out.length / R);
        }
        long inited = 0;
        long finalized = 0;
        for (int i = 0; i < total; i++) {
            PluginRecord r = record(out, i);
            if ((r.flags() & CLAIMED) == 0 && !pending(r)) {
                inited++;
                if (r.finalized()) {
                    finalized++;
                }
            }
        }
        return new long[] {inited, finalized};
    }

    /**
     * NCCL's operations in flight now on every communicator NCCL has not finalized, as its plugin
     * counts them: the MBean's NcclOpsInFlight. Read when the gauge is read, never on a call.
     */
    @Override
    public synchronized long getAsLong() {
        long[] work = new long[Interposer.IN_FLIGHT_LONGS];
        long sum = 0;
        for (PluginRecord r : current()) {
            if (!r.finalized()) {
                sum += Math.max(0, view.inFlight(r.id(), work));
            }
        }
        return sum;
    }

    /**
     * The records not finalized and not claimed now, as the library says, less those a bridge's
     * creation in flight may still claim. Under this lock no creation begins or ends meanwhile, so
     * a record read unclaimed here either is the plugin's alone or belongs to a creation that
     * {@link #pending} sees.
     */
    private List<PluginRecord> live() {
        List<PluginRecord> live = new ArrayList<>();
        for (PluginRecord r : current()) {
            if ((r.flags() & (CLAIMED | FINALIZED)) == 0 && !pending(r)) {
                live.add(r);
            }
        }
        return live;
    }

    /** Every record the library holds now, after a poll: read once more if it outgrew the buffer. */
    private List<PluginRecord> current() {
        poll();
        long[] out = new long[R * Math.max(16, records.size() + 16)];
        int total = view.comms(out);
        if (total * R > out.length) {
            out = new long[R * total + R * 16];
            total = Math.min(view.comms(out), out.length / R);
        }
        List<PluginRecord> all = new ArrayList<>(total);
        for (int i = 0; i < total; i++) {
            all.add(record(out, i));
        }
        return all;
    }

    static String hex(long commId) {
        String h = Long.toHexString(commId);
        return "0".repeat(16 - h.length()) + h;
    }

    /** The calling thread's id in the kernel's numbering (what the plugin records): /proc/thread-self. */
    static long threadId() {
        try {
            Path self = Files.readSymbolicLink(Path.of("/proc/thread-self"));
            return Long.parseLong(self.getFileName().toString());
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }

    /** Communicators only the plugin saw: the agent has no handle to them. */
    private static final class NotReleasable implements NativeAccess {
        @Override
        public String library() {
            return "an NCCL the agent saw only through its profiler plugin";
        }

        @Override
        public int call(String symbol, Object... args) {
            throw new IllegalStateException("no handle: a communicator seen only by NCCL's profiler plugin");
        }

        @Override
        public String cannotRelease() {
            return "ncclguard cannot release it: it saw this communicator only through NCCL's profiler plugin and"
                    + " has no handle to it (NCCL linked into a native library); the application must destroy it"
                    + " (ncclCommDestroy) before it exits";
        }
    }
}
