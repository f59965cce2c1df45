package dev.ncclguard.report;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.ncclguard.catalog.Kind;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class LeakGroupsTest {
    private record L(String handle, Kind kind, String api, String bridge, List<String> stack, Boolean stillPending,
            String cleanupWord, String cleanupNote, String callerLibrary, String callerSymbol, List<String> nativeStack)
            implements LeakGroups.Member {
        @Override
        public boolean fromNativeCode() {
            return callerLibrary != null || callerSymbol != null || !nativeStack.isEmpty();
        }

        static L event(String handle, String... stack) {
            return new L(handle, Kind.EVENT, "cudaEventCreate", "jna-interface", List.of(stack), null, "none", null,
                    null, null, List.of());
        }

        L pending(Boolean p) {
            return new L(handle, kind, api, bridge, stack, p, cleanupWord, cleanupNote, callerLibrary, callerSymbol,
                    nativeStack);
        }

        L cleanup(String word, String note) {
            return new L(handle, kind, api, bridge, stack, stillPending, word, note, callerLibrary, callerSymbol,
                    nativeStack);
        }

        L calledFrom(String library) {
            return new L(handle, kind, api, bridge, stack, stillPending, cleanupWord, cleanupNote, library, null,
                    nativeStack);
        }
    }

    private static List<List<String>> grouped(LeakGroups<L> groups) {
        List<List<String>> out = new ArrayList<>();
        for (LeakGroups.Group<L> g : groups.groups()) {
            List<String> handles = new ArrayList<>();
            handles.add(g.first().handle());
            g.listed().forEach(l -> handles.add(l.handle()));
            out.add(handles);
        }
        return out;
    }

    private static List<List<String>> grouped(L... leaks) {
        LeakGroups<L> groups = new LeakGroups<>(Integer.MAX_VALUE, 10);
        for (L l : leaks) {
            groups.add(l);
        }
        return grouped(groups);
    }

    @Test
    void leaksOfOneCreatingStackAreOneGroupInTheOrderOfTheirFirstLeak() {
        assertEquals(List.of(List.of("0x1", "0x3"), List.of("0x2")), grouped(L.event("0x1", "a.A.f(A.java:1)"),
                L.event("0x2", "b.B.g(B.java:2)"), L.event("0x3", "a.A.f(A.java:1)")));
    }

    @Test
    void theWholeStackMakesLeaksAlikeNotItsTopFrame() {
        // the commands grouped by the top frame alone; the text report, and now both, by the stack
        assertEquals(List.of(List.of("0x1"), List.of("0x2")), grouped(L.event("0x1", "a.A.f(A.java:1)", "m.M.x(M.java:5)"),
                L.event("0x2", "a.A.f(A.java:1)", "m.M.y(M.java:9)")));
    }

    @Test
    void theStateAtExitTheCleanupAndItsNoteSeparateLeaks() {
        L e = L.event("0x1", "a.A.f(A.java:1)");
        assertEquals(2, grouped(e, e.pending(true)).size());
        assertEquals(2, grouped(e.pending(true), e.pending(false)).size());
        assertEquals(2, grouped(e.cleanup("destroyed", null), e.cleanup("timed-out", null)).size());
        assertEquals(2, grouped(e.cleanup("failed", "cudaErrorX"), e.cleanup("failed", "cudaErrorY")).size());
        assertEquals(1, grouped(e.cleanup("failed", "cudaErrorX"), e.cleanup("failed", "cudaErrorX")).size());
    }

    @Test
    void leaksMadeInNativeCodeAreAlikeOnlyAtOneCallSite() {
        L e = L.event("0x1");
        assertEquals(2, grouped(e, e.calledFrom("libx.so")).size());
        assertEquals(2, grouped(e.calledFrom("libx.so"), e.calledFrom("liby.so")).size());
        assertEquals(1, grouped(e.calledFrom("libx.so"), e.calledFrom("libx.so")).size());
    }

    @Test
    void pastTheGroupsKeptLeaksAreOnlyCountedAndAGroupListsAFewAfterItsFirst() {
        LeakGroups<L> groups = new LeakGroups<>(1, 2);
        for (int i = 0; i < 5; i++) {
            groups.add(L.event("0x" + i, "a.A.f(A.java:1)"));
        }
        groups.add(L.event("0x9", "b.B.g(B.java:2)"));
        groups.add(L.event("0xa", "b.B.g(B.java:2)"));
        assertEquals(List.of(List.of("0x0", "0x1", "0x2")), grouped(groups));
        assertEquals(5, groups.groups().iterator().next().count());
        assertEquals(2, groups.notGrouped());
    }
}
