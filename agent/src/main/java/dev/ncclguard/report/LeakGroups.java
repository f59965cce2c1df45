package dev.ncclguard.report;

import dev.ncclguard.catalog.Kind;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Leaks alike grouped, as LeakSanitizer groups leaks by stack: the text report prints a group as
 * one block, the commands as one line. Alike is all that a group's first leak says of the others
 * ({@link #alike}): one kind, api and bridge, one creating stack and native call site, one state at
 * exit, one cleanup outcome and note. Groups keep the order of their first leaks; a group keeps
 * its first leak, the next few, and a count. Past {@code maxGroups}, leaks are only counted, so a
 * command reading a million leaks keeps a few kilobytes.
 *
 * @param <L> the writer's {@link Leak} or a command's leak as read from a report
 */
public final class LeakGroups<L extends LeakGroups.Member> {
    /** A leak as grouping sees it: the report's fields that make leaks alike. */
    public interface Member {
        Kind kind();

        String api();

        String bridge();

        /** The creating Java stack, application frames first; empty when none was recorded. */
        List<String> stack();

        /** Whether its work was still in flight at exit; null when unknown. */
        Boolean stillPending();

        /** The report's {@code cleanup} word. */
        String cleanupWord();

        String cleanupNote();

        /** Whether native code made it (the report's callerLibrary, callerSymbol, nativeStack). */
        boolean fromNativeCode();

        String callerLibrary();

        String callerSymbol();

        /** Empty when none. */
        List<String> nativeStack();
    }

    /** The leaks of one group: the first, the next few, and how many in all. */
    public static final class Group<L> {
        private final L first;
        private final List<L> listed;
        private final int maxListed;
        private long count = 1;

        Group(L first, int maxListed) {
            this.first = first;
            this.maxListed = maxListed;
            this.listed = new ArrayList<>(Math.min(maxListed, 8));
        }

        void add(L leak) {
            if (listed.size() < maxListed) {
                listed.add(leak);
            }
            count++;
        }

        public L first() {
            return first;
        }

        /** The leaks after the first, up to the few listed. */
        public List<L> listed() {
            return Collections.unmodifiableList(listed);
        }

        public long count() {
            return count;
        }
    }

    private final int maxGroups;
    private final int maxListed;
    private final Map<Key, Group<L>> groups = new LinkedHashMap<>();
    private Group<L> last;
    private long notGrouped;

    /**
     * @param maxGroups groups kept; leaks alike none of them are only counted ({@link #notGrouped})
     * @param maxListed leaks of a group kept after its first
     */
    public LeakGroups(int maxGroups, int maxListed) {
        this.maxGroups = maxGroups;
        this.maxListed = maxListed;
    }

    /** Adds the leak to its group, a new one if it is alike none. */
    public void add(L leak) {
        // leaks of one loop come one after the other: no key made for them
        if (last != null && alike(last.first, leak)) {
            last.add(leak);
            return;
        }
        Key key = new Key(leak);
        Group<L> g = groups.get(key);
        if (g == null) {
            if (groups.size() >= maxGroups) {
                notGrouped++;
                return;
            }
            g = new Group<>(leak, maxListed);
            groups.put(key, g);
        } else {
            g.add(leak);
        }
        last = g;
    }

    /** The groups, in the order of their first leaks. */
    public Collection<Group<L>> groups() {
        return Collections.unmodifiableCollection(groups.values());
    }

    /** Leaks alike none of the groups kept, counted only. */
    public long notGrouped() {
        return notGrouped;
    }

    /** The one rule of two leaks alike. */
    public static boolean alike(Member a, Member b) {
        return a.kind() == b.kind() && Objects.equals(a.api(), b.api()) && Objects.equals(a.bridge(), b.bridge())
                && (a.stack() == b.stack() || a.stack().equals(b.stack()))
                && Objects.equals(a.stillPending(), b.stillPending()) && Objects.equals(a.cleanupWord(), b.cleanupWord())
                && Objects.equals(a.cleanupNote(), b.cleanupNote()) && sameOrigin(a, b);
    }

    /** Made in native code at one call site (library and symbol, native stack), or both not. */
    private static boolean sameOrigin(Member a, Member b) {
        if (!a.fromNativeCode() || !b.fromNativeCode()) {
            return a.fromNativeCode() == b.fromNativeCode();
        }
        return Objects.equals(a.callerLibrary(), b.callerLibrary()) && Objects.equals(a.callerSymbol(), b.callerSymbol())
                && (a.nativeStack() == b.nativeStack() || a.nativeStack().equals(b.nativeStack()));
    }

    /**
     * A group's key: its first leak, equal to the leaks {@link #alike} it. A class rather than a
     * record (docs/performance.md, "Records at exit").
     */
    private static final class Key {
        private final Member leak;

        Key(Member leak) {
            this.leak = leak;
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Key other && alike(leak, other.leak);
        }

        @Override
        public int hashCode() {
            return Objects.hash(leak.kind(), leak.api(), leak.bridge(), leak.stack(), leak.stillPending(),
                    leak.cleanupWord(), leak.cleanupNote(), leak.fromNativeCode() ? leak.callerLibrary() : null);
        }
    }
}
