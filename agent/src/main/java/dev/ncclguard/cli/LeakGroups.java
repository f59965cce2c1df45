package dev.ncclguard.cli;

import dev.ncclguard.log.OneLine;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The leaks of one report grouped as the agent's text report groups them (LeakSanitizer's way):
 * leaks of one kind made by one api through one bridge at one creating frame, with the same
 * cleanup outcome, are one line: the first in full, then how many more and the next handles. At
 * most {@link #MAX_GROUPS} groups are kept, so a report of a million leaks costs a few kilobytes.
 */
final class LeakGroups implements ReportFile.Entries {
    static final int MAX_GROUPS = 50;
    private static final int HANDLES_SHOWN = 5;

    private record Key(String kind, String api, String bridge, String frame, String cleanup) {
    }

    static final class Group {
        final ReportFile.LeakEntry first;
        long count;
        final List<String> next = new ArrayList<>(HANDLES_SHOWN);

        Group(ReportFile.LeakEntry first) {
            this.first = first;
        }

        /** "leaked communicator 0x20 (...) by ncclCommInitRank at X, and 3 more alike: 0x21, 0x22, 0x23" */
        String line() {
            String line = Words.leak(first);
            if (count == 1) {
                return line;
            }
            StringBuilder out = new StringBuilder(line).append(", and ").append(Words.thousands(count - 1))
                    .append(" more alike: ");
            for (int i = 0; i < next.size(); i++) {
                out.append(i > 0 ? ", " : "").append(OneLine.of(next.get(i)));
            }
            return out.append(count - 1 > next.size() ? ", ..." : "").toString();
        }
    }

    private final Map<Key, Group> groups = new LinkedHashMap<>();
    private long notGrouped;

    @Override
    public void leak(ReportFile.LeakEntry leak) {
        Key key = new Key(leak.kind(), leak.api(), leak.bridge(), leak.topFrame(), leak.cleanup());
        Group g = groups.get(key);
        if (g == null) {
            if (groups.size() == MAX_GROUPS) {
                notGrouped++;
                return;
            }
            g = new Group(leak);
            groups.put(key, g);
        } else if (g.next.size() < HANDLES_SHOWN) {
            g.next.add(leak.handle());
        }
        g.count++;
    }

    List<Group> groups() {
        return List.copyOf(groups.values());
    }

    /** Leaks beyond the groups kept, counted only. */
    long notGrouped() {
        return notGrouped;
    }

    /** The groups' lines, and one for the leaks beyond them. */
    List<String> lines() {
        List<String> out = new ArrayList<>();
        for (Group g : groups.values()) {
            out.add(g.line());
        }
        if (notGrouped > 0) {
            out.add("... and " + Words.thousands(notGrouped) + " more leaks made elsewhere; the JSON report lists"
                    + " every one");
        }
        return out;
    }
}
