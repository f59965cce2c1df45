package dev.ncclguard.track;

import java.lang.ref.WeakReference;
import java.util.Arrays;

/**
 * Shares creating stacks between handles (the tracker's events and streams): a handle created
 * where an earlier one was, while a handle still holds that one's Throwable, gets the earlier
 * Throwable rather than its own. Stacks are captured as Throwables (the VM fills arrays of method
 * ids and bytecode indexes, resolving no names) and compared by those arrays ({@link Backtraces}),
 * never by {@code getStackTrace}. So 100,000 events made in one loop hold one stack, not 100,000
 * of about 700 bytes each: the GC copies one, and the exit report resolves and matches one.
 *
 * <p>A direct-mapped table of the last stack seen per hash: a miss or a collision only means a
 * handle keeps its own Throwable, as it did before. The table holds its stacks weakly, so a
 * stack no handle holds any more (nor the classes its frames name) can be collected. Two
 * Throwables share only when their backtraces are equal array for array (the same classes,
 * methods, class versions and bytecode indexes): what getStackTrace would make of them is then
 * the same. Thread-safe: entries are immutable and published through final fields.
 */
final class CreationStacks {
    static final int SLOTS = 1024;
    /** Chunks of 32 frames: 1024 frames (the VM's default MaxJavaStackTraceDepth) are 32 of them. */
    private static final int MAX_CHUNKS = 40;

    private final Entry[] slots = new Entry[SLOTS];

    /** {@code fresh}, or a Throwable captured earlier at the same stack that is still held. */
    Throwable share(Throwable fresh) {
        Object trace = Backtraces.of(fresh);
        if (!(trace instanceof Object[] chunk)) {
            return fresh;
        }
        int hash = hash(chunk);
        int slot = (hash ^ (hash >>> 16)) & (SLOTS - 1);
        Entry entry = slots[slot];
        if (entry != null && entry.hash == hash) {
            Throwable known = entry.stack.get();
            if (known != null && sameChunks(Backtraces.of(known), chunk)) {
                return known;
            }
        }
        slots[slot] = new Entry(hash, fresh);
        return fresh;
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

    /** A stack seen at a hash, held weakly. */
    private static final class Entry {
        final int hash;
        final WeakReference<Throwable> stack;

        Entry(int hash, Throwable stack) {
            this.hash = hash;
            this.stack = new WeakReference<>(stack);
        }
    }
}
