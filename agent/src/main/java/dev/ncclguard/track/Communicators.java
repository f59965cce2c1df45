package dev.ncclguard.track;

import dev.ncclguard.catalog.Catalog;
import dev.ncclguard.catalog.Change;
import dev.ncclguard.catalog.NativeFunction;
import dev.ncclguard.catalog.Status;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The tracker's communicators: their records from creation to release, their identity across
 * ranks (the commId every rank computes alike, see {@link CommIds}), and the history of released
 * ones for the report's communicators list.
 */
final class Communicators {
    /** Released communicators kept for the report's communicators list (the newest). */
    static final int RELEASED_COMMS_KEPT = 10_000;
    /** Bounds that keep a garbage argument from turning into a long loop. */
    private static final int MAX_INIT_ALL_DEVICES = 1 << 12;
    private static final int MAX_EXCLUDED_RANKS = 1 << 20;

    private final Tracker tracker;
    final LongMap<CommRecord> records = new LongMap<>();
    private final AtomicLong created = new AtomicLong();
    private final AtomicLong released = new AtomicLong();
    private final ReleasedComms history = new ReleasedComms(RELEASED_COMMS_KEPT);

    Communicators(Tracker tracker) {
        this.tracker = tracker;
    }

    CommRecord get(long handle) {
        return records.get(handle);
    }

    long createdCount() {
        return created.get();
    }

    long releasedCount() {
        return released.get();
    }

    // --- creation ---

    /** ncclCommInitRank and its variants: a communicator whose identity is its unique id's. */
    void created(NativeFunction fn, CallArgs args, String bridge, NativeAccess access) {
        long h = args.handleOut(fn.handle());
        if (h == 0) {
            return;
        }
        // InitRankScalable's argument points at its first id: every rank passes the same ids
        byte[] id = args.bytes(fn.uniqueId(), Catalog.UNIQUE_ID_BYTES);
        boolean hasId = id != null && id.length == Catalog.UNIQUE_ID_BYTES;
        add(new CommRecord(h, tracker.nextSerial(), fn.symbol(), bridge, Tracker.threadName(), tracker.now(),
                tracker.stack(), tracker.currentDevice(), access, rankOrUnknown(args, fn.rank()),
                rankOrUnknown(args, fn.nranks()), hasId, hasId ? CommIds.ofUniqueId(id) : 0, false, 0,
                hasId, hasId ? CommIds.ncclMagic(id) : 0), args);
    }

    /** ncclCommInitAll: one communicator per devlist entry (device i when devlist is null). */
    void cliqueCreated(NativeFunction fn, CallArgs args, String bridge, NativeAccess access) {
        int ndev = args.intArg(fn.nranks());
        if (ndev <= 0 || ndev > MAX_INIT_ALL_DEVICES) {
            return;
        }
        long commId = cliqueCommId(ndev, args);
        String thread = Tracker.threadName();
        long now = tracker.now();
        Throwable creation = tracker.stack();
        for (int i = 0; i < ndev; i++) {
            long h = args.handleOut(fn.handle(), i);
            if (h != 0) {
                int device = args.intArray(fn.device(), i, i);
                add(new CommRecord(h, tracker.nextSerial(), fn.symbol(), bridge, thread, now, creation, device,
                        access, i, ndev, true, commId, false, 0), args);
            }
        }
    }

    /** ncclCommSplit and ncclCommShrink: a child whose identity derives from its parent's. */
    void childCreated(NativeFunction fn, CallArgs args, String bridge, NativeAccess access) {
        boolean split = fn.change() == Change.SPLIT_COMMUNICATOR;
        CommRecord parent = records.get(args.handle(fn.parentComm()));
        // NCCL's childCount after a split, counted also on a rank that gets no child
        // (NCCL_SPLIT_NOCOLOR), so that the n-th split of a parent is the same split on every rank
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
                commId = CommIds.ofShrink(parent.commId);
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
        int device = parent != null ? parent.device : tracker.currentDevice();
        // a split's or shrink's child: its magic is its commHash (bootstrapSplit)
        add(new CommRecord(h, tracker.nextSerial(), fn.symbol(), bridge, Tracker.threadName(), tracker.now(),
                tracker.stack(), device, access, rank, nranks, hasId, commId, hasId, hasId ? parent.commId : 0,
                hasId, commId), args);
    }

    /**
     * ncclCommGrow (NCCL 2.29): an existing rank passes its communicator (and rank -1) and keeps its
     * rank and device; a new rank passes the grow's unique id and its rank. Every rank names the new
     * communicator by the commHash NCCL gives it, hashCombine(the grow's magic, nRanks): the new
     * ranks know only the id, whose first 8 bytes are that magic, and an existing rank that got no
     * id computes it from its parent as NCCL does, hashCombine(parent's magic, its childCount).
     */
    void grown(NativeFunction fn, CallArgs args, String bridge, NativeAccess access) {
        CommRecord parent = records.get(args.handle(fn.parentComm()));
        int nth = parent == null ? 0 : parent.nextGrow();
        long h = args.handleOut(fn.handle());
        if (h == 0) {
            return;
        }
        int nRanks = args.intArg(fn.nranks());
        byte[] id = args.bytes(fn.uniqueId(), Catalog.UNIQUE_ID_BYTES);
        boolean known = true;
        long magic;
        if (id != null && id.length == Catalog.UNIQUE_ID_BYTES) {
            magic = CommIds.ncclMagic(id);
        } else if (parent != null && parent.hasNcclIdentity()) {
            magic = CommIds.ncclHashCombine(parent.ncclMagic, nth);
        } else {
            known = false;
            magic = 0;
        }
        long commHash = known ? CommIds.ncclHashCombine(magic, nRanks) : 0;
        boolean hasParent = parent != null && parent.hasCommId;
        int rank = parent != null ? parent.rank : rankOrUnknown(args, fn.rank());
        int device = parent != null ? parent.device : tracker.currentDevice();
        add(new CommRecord(h, tracker.nextSerial(), fn.symbol(), bridge, Tracker.threadName(), tracker.now(),
                tracker.stack(), device, access, rank, nRanks > 0 ? nRanks : CommRecord.UNKNOWN, known, commHash,
                hasParent, hasParent ? parent.commId : 0, known, magic), args);
    }

    /** ncclCommRevoke: a step; the communicator is still live until destroyed or aborted. */
    void revoked(long handle) {
        CommRecord c = records.get(handle);
        if (c != null) {
            c.revoked = true;
        }
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

    private static int rankOrUnknown(CallArgs args, int index) {
        if (index < 0) {
            return CommRecord.UNKNOWN;
        }
        int v = args.intArg(index);
        return v >= 0 ? v : CommRecord.UNKNOWN;
    }

    /**
     * NCCL's commId of an ncclCommInitAll clique, which hashes a unique id made inside the call:
     * taken from NCCL's profiler plugin, else an identity of the agent's own.
     */
    private long cliqueCommId(int ndev, CallArgs args) {
        NcclProfiler profiler = tracker.ncclProfiler();
        if (profiler != null) {
            try {
                boolean[] found = new boolean[1];
                long id = profiler.cliqueCommId(ndev, args.profilerInits(), found);
                if (found[0]) {
                    return id;
                }
            } catch (RuntimeException e) {
                tracker.internalError(e);
            }
        }
        return CommIds.fresh();
    }

    /**
     * A create at an address we still hold means its release was not seen yet: count it now. The
     * profiler plugin's record of the communicator is claimed first, so that it is one record.
     */
    private void add(CommRecord c, CallArgs args) {
        NcclProfiler profiler = tracker.ncclProfiler();
        if (profiler != null) {
            try {
                long record = profiler.claim(c.hasCommId, c.commId, c.rank, c.nranks, args.profilerInits());
                if (record != 0) {
                    // NCCL's own word wins: a split of a parent made before an attach has no id of ours
                    c.commId = profiler.commId(record);
                    c.hasCommId = true;
                    c.profilerRecord = record;
                }
            } catch (RuntimeException e) {
                tracker.internalError(e);
            }
        }
        created.incrementAndGet();
        CommRecord old = records.put(c.handle, c);
        if (old != null) {
            released.incrementAndGet();
            if (old.resourcesOrNull() != null) {
                old.resourcesOrNull().close();
            }
        }
        try {
            tracker.listener().communicatorCreated(c.handle, c.api, c.bridge, c.rank, c.nranks, c.device,
                    c.hasCommId ? CommIds.hex(c.commId) : null);
        } catch (RuntimeException e) {
            tracker.internalError(e); // one listener failure must not lose the other communicators of an InitAll
        }
    }

    // --- finalize and release ---

    void finalized(long handle) {
        CommRecord c = records.get(handle);
        if (c != null) {
            c.finalized = true;
        }
    }

    /** Before a destroy or abort: the record's serial, or {@link Tracker#CLAIMED_BY_CLEANUP}. */
    long enterRelease(long handle) {
        CommRecord c = records.get(handle);
        long token = Tracked.releaseToken(c);
        if (c != null && token == c.serial) {
            c.releaseStarted(tracker.now());
        }
        return token;
    }

    /**
     * After a destroy or abort: a success ends the record {@code token} names; a failure leaves it
     * live and claimable again, but ncclInProgress is no failure: a nonblocking communicator's
     * release goes on inside NCCL.
     */
    void released(NativeFunction fn, long handle, int status, long token, String bridge) {
        if (status == Status.NCCL_SUCCESS) {
            CommRecord c = records.removeIfSerial(handle, token);
            if (c != null) {
                CommResources held = c.resourcesOrNull();
                if (held != null) {
                    held.close(); // NCCL frees the registrations, windows and device communicators with it
                }
                released.incrementAndGet();
                history.add(CommLife.of(c, tracker.now(), fn.symbol()));
                try {
                    tracker.listener().communicatorReleased(handle, fn.symbol(), bridge);
                } catch (RuntimeException e) {
                    tracker.internalError(e);
                }
            }
        } else if (status != Status.NCCL_IN_PROGRESS) {
            CommRecord c = records.get(handle);
            Tracked.releaseFailed(c, token);
            if (c != null && c.serial == token) {
                c.releaseEnded();
            }
        }
    }

    // --- the report's communicators list ---

    /**
     * Every communicator seen, released ones (the newest {@value #RELEASED_COMMS_KEPT}) and live
     * ones, and {@code extra} (those only NCCL's profiler plugin saw), in the order of their creation.
     */
    List<CommLife> communicators(List<CommLife> extra) {
        List<CommRecord> live = new ArrayList<>();
        records.valuesTo(live);
        List<CommLife> all = history.list();
        all.addAll(extra);
        for (CommRecord c : live) {
            all.add(CommLife.of(c, 0, null));
        }
        all.sort(new ByCreation());
        return all;
    }

    /** Released communicators left out of {@link #communicators()} to bound memory. */
    long omitted() {
        return history.dropped();
    }

    /**
     * A class, not a lambda: communicators() runs at exit, where a lambda's first call links method
     * handles; and made there, so that premain does not load it.
     */
    private static final class ByCreation implements Comparator<CommLife> {
        @Override
        public int compare(CommLife a, CommLife b) {
            return Long.compare(a.createdAtMillis(), b.createdAtMillis());
        }
    }
}
