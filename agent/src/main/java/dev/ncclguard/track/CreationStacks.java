package dev.ncclguard.track;

import dev.ncclguard.log.Log;
import java.lang.ref.Reference;
import java.lang.ref.ReferenceQueue;
import java.lang.ref.WeakReference;
import java.util.Arrays;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;

/**
 * The depot of creating stacks (the tracker's events and streams), as LLVM's StackDepot: each
 * distinct stack is kept once, and a handle created where an earlier live one was gets that
 * one's Throwable rather than its own. Stacks are captured as Throwables (the VM fills arrays of
 * method ids and bytecode indexes, resolving no names) and compared by those arrays
 * ({@link Backtraces}), never by {@code getStackTrace}: two share only when their backtraces are
 * equal array for array (the same classes, methods, class versions and bytecode indexes), which is
 * what getStackTrace would make of them. So 100,000 events made in one loop hold one stack, not
 * 100,000 of about 700 bytes each, and 10 million create/destroy pairs at a few places leave a
 * few entries.
 *
 * <p>Entries hold their stack weakly: one no handle holds any more (nor the classes its frames
 * name) is collected, and its entry is dropped when next met or at a sweep. The depot is bounded
 * (option {@code stack-depot}): when it is full, a sweep keeps only the stacks that live records hold
 * ({@code live}); if those still fill it, a handle created at a new stack gets {@link #notKept}
 * (its report says why) and one line says so, until a later sweep finds room. Lookups take no
 * lock (a ConcurrentHashMap); inserts and sweeps take the depot's. Why the walk itself stays:
 * docs/performance.md, "Creations through the Java bridges".
 */
final class CreationStacks {
    public static final int DEFAULT_MAX = 65_536;
    /** Chunks of 32 frames: 1024 frames (the VM's default MaxJavaStackTraceDepth) are 32 of them. */
    private static final int MAX_CHUNKS = 40;

    private final ConcurrentHashMap<Key, Key> depot = new ConcurrentHashMap<>();
    /** Entries whose stack was collected, dropped at the next insert: a loop of pairs leaves one entry per place. */
    private final ReferenceQueue<Throwable> collected = new ReferenceQueue<>();
    private final Consumer<Consumer<Throwable>> live;
    private final int max;
    private final StackNotKept notKept;
    /** Guarded by this: creations refused since the last sweep, and how many wait for the next. */
    private int refused;
    private int refusedBeforeSweep;
    private long notKeptCount;

    /** @param live hands each creating stack that a live record holds to its argument */
    CreationStacks(int max, Consumer<Consumer<Throwable>> live) {
        this.max = Math.max(1, max);
        this.live = live;
        this.notKept = new StackNotKept(this.max);
    }

    /** A depot of the default bound that knows no live records (tests). */
    CreationStacks() {
        this(DEFAULT_MAX, each -> { });
    }

    /**
     * {@code fresh}, or a Throwable captured earlier at the same stack that is still held, or
     * {@link #notKept} when the depot is full of live stacks and {@code fresh}'s is new.
     */
    Throwable share(Throwable fresh) {
        Object trace = Backtraces.of(fresh);
        if (!(trace instanceof Object[] chunk)) {
            return fresh; // another VM: each handle keeps its own, as before the depot
        }
        Key probe = new Key(hash(chunk), fresh, null);
        Key known = depot.get(probe);
        if (known != null) {
            Throwable stack = known.stack();
            if (stack != null) {
                return stack;
            }
        }
        return insert(probe);
    }

    private synchronized Throwable insert(Key probe) {
        Throwable fresh = probe.stack();
        Key known = depot.get(probe);
        Throwable stack = known == null ? null : known.stack();
        if (stack != null) {
            return stack; // inserted by another thread meanwhile
        }
        for (Reference<? extends Throwable> r; (r = collected.poll()) != null; ) {
            depot.remove(((Held) r).key);
        }
        if (depot.size() >= max && !room()) {
            notKeptCount++;
            if (notKeptCount == 1) {
                Log.warn("stack-depot=" + max + " distinct creating stacks are held by live events and streams:"
                        + " events and streams created at a new stack from now on are reported without it"
                        + " (\"" + StackNotKept.line(max) + "\"); a larger stack-depot= keeps more");
            }
            return notKept;
        }
        Key entry = new Key(probe.hash, fresh, collected);
        depot.put(entry, entry);
        return fresh;
    }

    /**
     * Whether a sweep makes room: entries whose stack was collected or that no live record holds
     * leave. When live stacks fill the depot, the next sweep waits for {@code max / 16} more
     * refusals (at least one), so that a full depot costs a sweep per many creations, not each.
     */
    private boolean room() {
        if (refused++ < refusedBeforeSweep) {
            return false;
        }
        Set<Throwable> held = Collections.newSetFromMap(new IdentityHashMap<>());
        live.accept(held::add);
        depot.keySet().removeIf(k -> {
            Throwable s = k.stack();
            return s == null || !held.contains(s);
        });
        refused = 0;
        boolean room = depot.size() < max;
        refusedBeforeSweep = room ? 0 : Math.max(1, max / 16);
        return room;
    }

    /** Distinct stacks in the depot (live ones, and any not yet swept). */
    int size() {
        return depot.size();
    }

    int max() {
        return max;
    }

    /** Creations whose stack was not kept because the depot was full. */
    synchronized long notKeptCount() {
        return notKeptCount;
    }

    /**
     * The first chunk's bytecode indexes (with class versions), the array of ints: equal
     * backtraces hash alike, and frames of other methods rarely share all of them. A sum of
     * products, which the JIT vectorizes, rather than Arrays.hashCode's chain of multiplications.
     */
    private static int hash(Object[] chunk) {
        for (Object part : chunk) {
            if (part instanceof int[] bcis) {
                int h = 0;
                for (int i = 0; i < bcis.length; i++) {
                    h += bcis[i] * (0x9E3779B1 + 2 * i);
                }
                return h;
            }
        }
        return 0;
    }

    /**
     * Array for array, whatever the VM's layout: primitive arrays by content, arrays of objects
     * element by element (classes by identity), a nested chunk (the next 32 frames) likewise.
     * Stacks deeper than {@link #MAX_CHUNKS} chunks are never the same.
     */
    private static boolean sameChunks(Object a, Object b) {
        return a instanceof Object[] x && b instanceof Object[] y && same(x, y, 0);
    }

    private static boolean same(Object[] a, Object[] b, int nesting) {
        if (a.length != b.length || nesting > MAX_CHUNKS) {
            return false;
        }
        for (int i = 0; i < a.length; i++) {
            Object p = a[i];
            Object q = b[i];
            if (p == q) {
                continue;
            }
            if (p instanceof Object[] x) {
                if (!(q instanceof Object[] y) || !same(x, y, nesting + 1)) {
                    return false;
                }
            } else if (!samePrimitives(p, q)) {
                return false;
            }
        }
        return true;
    }

    private static boolean samePrimitives(Object p, Object q) {
        if (p instanceof short[] x) {
            return q instanceof short[] y && Arrays.equals(x, y);
        } else if (p instanceof int[] x) {
            return q instanceof int[] y && Arrays.equals(x, y);
        } else if (p instanceof long[] x) {
            return q instanceof long[] y && Arrays.equals(x, y);
        } else if (p instanceof byte[] x) {
            return q instanceof byte[] y && Arrays.equals(x, y);
        }
        return false; // distinct objects that are not arrays (classes, anything else): not the same
    }

    /**
     * A stack by its backtrace: a probe holds the fresh capture strongly for one lookup, an entry
     * of the depot holds its stack weakly. A collected entry equals nothing but itself.
     */
    private static final class Key {
        final int hash;
        private final Object stack;

        /** @param queue null for a probe; else the queue the entry's reference goes to once collected */
        Key(int hash, Throwable stack, ReferenceQueue<Throwable> queue) {
            this.hash = hash;
            this.stack = queue == null ? stack : new Held(stack, queue, this);
        }

        Throwable stack() {
            return stack instanceof Held h ? h.get() : (Throwable) stack;
        }

        @Override
        public int hashCode() {
            return hash;
        }

        @Override
        public boolean equals(Object o) {
            if (o == this) {
                return true;
            }
            if (!(o instanceof Key k) || k.hash != hash) {
                return false;
            }
            Throwable a = stack();
            Throwable b = k.stack();
            return a != null && b != null && (a == b || sameChunks(Backtraces.of(a), Backtraces.of(b)));
        }
    }

    /** An entry's weak hold on its stack, which names the entry to drop once the stack is collected. */
    private static final class Held extends WeakReference<Throwable> {
        final Key key;

        Held(Throwable stack, ReferenceQueue<Throwable> queue, Key key) {
            super(stack, queue);
            this.key = key;
        }
    }
}
