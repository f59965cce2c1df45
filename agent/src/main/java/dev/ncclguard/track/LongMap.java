package dev.ncclguard.track;

import java.lang.invoke.VarHandle;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

/**
 * Native address to record, without boxing: lookups on the hot path (every event record, every
 * collective) allocate nothing, and an entry costs a long and a reference instead of a
 * ConcurrentHashMap node and a Long. Striped: each stripe is an open-addressing table whose
 * writes hold its lock for the few instructions of one operation. Lookups take no lock: they read
 * optimistically and are validated by the stripe's stamp (an uncontended lock still costs two
 * atomic instructions, more than the whole lookup; benchmark AgentPath). The lock is the stripe's
 * own sequence, not a StampedLock: StampedLock's methods are {@code @ReservedStackAccess}, and
 * inlined into the tracker's exit they make the JVM print "Potentially dangerous stack overflow
 * in ReservedStackAccess annotated method" at every StackOverflowError that meets a tracked call. A record that leaves
 * the map is marked {@link Tracked#ended}, so a caller holding it can tell it is no longer current.
 */
final class LongMap<V extends Tracked> {
    private static final int STRIPE_BITS = 6;
    private static final int MIN_CAPACITY = 4;

    private static final int RECENT = 1 << 10;

    private final Stripe[] stripes = new Stripe[1 << STRIPE_BITS];
    /**
     * Records that {@link #get} found lately, by hash: a hit reads three objects where the stripes
     * need five, and a tracked call of a JNA application finds them in a cache that JNA's own work
     * in between has churned. Written without ordering: a record's handle is final, and one that
     * left the map is {@link Tracked#ended}, so a stale entry is only missed and replaced. Only
     * records whose key is their handle enter (not the special streams).
     */
    private final Tracked[] recent = new Tracked[RECENT];

    LongMap() {
        for (int i = 0; i < stripes.length; i++) {
            stripes[i] = new Stripe();
        }
    }

    /**
     * Fibonacci hashing, its high half folded into the low: native addresses are aligned, so their
     * low bits alone hash badly. One multiply: this runs twice per tracked call.
     */
    static long mix(long k) {
        long h = k * 0x9E3779B97F4A7C15L;
        return h ^ (h >>> 32);
    }

    private Stripe stripe(long h) {
        return stripes[(int) (h >>> (64 - STRIPE_BITS))];
    }

    @SuppressWarnings("unchecked")
    V get(long key) {
        long h = mix(key);
        int slot = (int) h & (RECENT - 1);
        Tracked hot = recent[slot];
        if (hot != null && hot.handle == key && !hot.ended()) {
            return (V) hot;
        }
        V found = getFromStripes(key, h);
        if (found != null && found.handle == key) {
            recent[slot] = found;
        }
        return found;
    }

    @SuppressWarnings("unchecked")
    private V getFromStripes(long key, long h) {
        Stripe s = stripe(h);
        long stamp = s.tryOptimisticRead();
        if (stamp != 0) {
            Object found = s.findRacy(key, h);
            if (s.validate(stamp)) {
                return (V) found;
            }
        }
        stamp = s.lock();
        try {
            int i = s.find(key, h);
            return i >= 0 ? (V) s.vals[i] : null;
        } finally {
            s.unlock(stamp);
        }
    }

    /** Puts {@code value} and returns the record it replaced, or null. */
    @SuppressWarnings("unchecked")
    V put(long key, V value) {
        long h = mix(key);
        Stripe s = stripe(h);
        long stamp = s.lock();
        try {
            int i = s.find(key, h);
            if (i >= 0) {
                V old = (V) s.vals[i];
                s.vals[i] = value;
                if (old != value) {
                    ended(old, h);
                }
                return old;
            }
            s.insertAt(-1 - i, key, value);
            return null;
        } finally {
            s.unlock(stamp);
        }
    }

    /** Puts {@code value} unless a record is there; returns that record, or null if it put. */
    @SuppressWarnings("unchecked")
    V putIfAbsent(long key, V value) {
        long h = mix(key);
        Stripe s = stripe(h);
        long stamp = s.lock();
        try {
            int i = s.find(key, h);
            if (i >= 0) {
                return (V) s.vals[i];
            }
            s.insertAt(-1 - i, key, value);
            return null;
        } finally {
            s.unlock(stamp);
        }
    }

    /** Removes the record of {@code key} only if it is the one with {@code serial}. */
    @SuppressWarnings("unchecked")
    V removeIfSerial(long key, long serial) {
        long h = mix(key);
        Stripe s = stripe(h);
        long stamp = s.lock();
        try {
            int i = s.find(key, h);
            if (i < 0 || ((Tracked) s.vals[i]).serial != serial) {
                return null;
            }
            V old = (V) s.vals[i];
            s.deleteAt(i);
            ended(old, h);
            return old;
        } finally {
            s.unlock(stamp);
        }
    }

    /** {@code old} left the map: callers holding it see that, and the cache lets it go. */
    private void ended(Tracked old, long h) {
        old.end();
        int slot = (int) h & (RECENT - 1);
        if (recent[slot] == old) {
            recent[slot] = null;
        }
    }

    int size() {
        int n = 0;
        for (Stripe s : stripes) {
            long stamp = s.lock();
            try {
                n += s.size;
            } finally {
                s.unlock(stamp);
            }
        }
        return n;
    }

    /** Adds every record to {@code out}; each stripe is copied under its lock. */
    @SuppressWarnings("unchecked")
    void valuesTo(List<V> out) {
        for (Stripe s : stripes) {
            long stamp = s.lock();
            try {
                for (Object v : s.vals) {
                    if (v != null) {
                        out.add((V) v);
                    }
                }
            } finally {
                s.unlock(stamp);
            }
        }
    }

    /** Runs {@code action} on every record while its stripe's lock is held: keep it short. */
    @SuppressWarnings("unchecked")
    void forEach(Consumer<V> action) {
        for (Stripe s : stripes) {
            long stamp = s.lock();
            try {
                for (Object v : s.vals) {
                    if (v != null) {
                        action.accept((V) v);
                    }
                }
            } finally {
                s.unlock(stamp);
            }
        }
    }

    /**
     * Linear probing; a null value marks a free slot, so every long (0 included) is a valid key.
     * The stripe is its lock, so a lookup reads one object less: a sequence that is odd while a
     * writer holds it (a seqlock). Writes and the rare walks over a stripe hold it; lookups read
     * without it and validate against it. Not reentrant: no callback runs under it that touches the map.
     */
    @SuppressWarnings("serial") // never serialized
    private static final class Stripe extends AtomicLong {
        /** Spins before a waiting writer yields: a holder keeps it for a few hundred instructions. */
        private static final int SPINS = 64;

        long[] keys = new long[MIN_CAPACITY];
        Object[] vals = new Object[MIN_CAPACITY];
        int size;

        /** The stamp of a lookup without the lock, or 0 while a writer holds it. */
        long tryOptimisticRead() {
            long v = get();
            return (v & 1) == 0 ? v | Long.MIN_VALUE : 0;
        }

        /** Whether nothing was written since {@code stamp}; the reads before it are ordered before this check. */
        boolean validate(long stamp) {
            VarHandle.acquireFence();
            return (get() | Long.MIN_VALUE) == stamp;
        }

        long lock() {
            for (int spins = 0; ; spins++) {
                long v = get();
                if ((v & 1) == 0 && compareAndSet(v, v + 1)) {
                    return v + 1;
                }
                if (spins < SPINS) {
                    Thread.onSpinWait();
                } else {
                    Thread.yield();
                }
            }
        }

        void unlock(long stamp) {
            set(stamp + 1);
        }

        /**
         * {@link #find} without the lock, while a writer may be changing the table: the result is
         * used only if the stamp validates afterwards. The arrays are read once, since a resize
         * replaces them, and the probe stops after one lap even if the table it sees is full.
         */
        Object findRacy(long key, long h) {
            long[] ks = keys;
            Object[] vs = vals;
            int n = Math.min(ks.length, vs.length);
            int mask = n - 1;
            int i = (int) h & mask;
            for (int probes = 0; probes < n; probes++) {
                Object v = vs[i];
                if (v == null) {
                    return null;
                }
                if (ks[i] == key) {
                    return v;
                }
                i = (i + 1) & mask;
            }
            return null;
        }

        /** The slot of {@code key}, or -1 - (the free slot where it would go). */
        int find(long key, long h) {
            int mask = vals.length - 1;
            int i = (int) h & mask;
            while (vals[i] != null) {
                if (keys[i] == key) {
                    return i;
                }
                i = (i + 1) & mask;
            }
            return -1 - i;
        }

        void insertAt(int i, long key, Object value) {
            keys[i] = key;
            vals[i] = value;
            size++;
            if (size * 3 > vals.length * 2) {
                resize(vals.length * 2);
            }
        }

        /** Backward-shift deletion: no tombstones, so lookups never slow down with churn. */
        void deleteAt(int i) {
            int mask = vals.length - 1;
            int j = i;
            while (true) {
                j = (j + 1) & mask;
                if (vals[j] == null) {
                    break;
                }
                int home = (int) mix(keys[j]) & mask;
                boolean homeInGap = i <= j ? (home > i && home <= j) : (home > i || home <= j);
                if (!homeInGap) {
                    keys[i] = keys[j];
                    vals[i] = vals[j];
                    i = j;
                }
            }
            keys[i] = 0;
            vals[i] = null;
            size--;
            // give memory back after a burst of handles has been released
            if (vals.length > MIN_CAPACITY && size * 8 < vals.length) {
                resize(vals.length / 2);
            }
        }

        private void resize(int capacity) {
            long[] oldKeys = keys;
            Object[] oldVals = vals;
            keys = new long[capacity];
            vals = new Object[capacity];
            int mask = capacity - 1;
            for (int k = 0; k < oldVals.length; k++) {
                if (oldVals[k] != null) {
                    int i = (int) mix(oldKeys[k]) & mask;
                    while (vals[i] != null) {
                        i = (i + 1) & mask;
                    }
                    keys[i] = oldKeys[k];
                    vals[i] = oldVals[k];
                }
            }
        }
    }
}
