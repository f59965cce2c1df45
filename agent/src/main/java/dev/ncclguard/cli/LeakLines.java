package dev.ncclguard.cli;

import dev.ncclguard.log.OneLine;
import dev.ncclguard.report.LeakGroups;
import java.util.ArrayList;
import java.util.List;

/**
 * The leaks of one report as the commands print them: leaks alike (report.LeakGroups, the agent's
 * text report's rule) one line each, the first in full, then how many more and the next handles.
 * At most {@link #MAX_GROUPS} groups are kept, so a report of a million leaks costs a few kilobytes.
 */
final class LeakLines implements ReportFile.Entries {
    static final int MAX_GROUPS = 50;
    private static final int HANDLES_SHOWN = 5;

    private final LeakGroups<ReportFile.LeakEntry> groups = new LeakGroups<>(MAX_GROUPS, HANDLES_SHOWN);

    @Override
    public void leak(ReportFile.LeakEntry leak) {
        groups.add(leak);
    }

    /** The groups' lines, and one for the leaks beyond them. */
    List<String> lines() {
        List<String> out = new ArrayList<>();
        for (LeakGroups.Group<ReportFile.LeakEntry> g : groups.groups()) {
            out.add(line(g));
        }
        if (groups.notGrouped() > 0) {
            out.add("... and " + Words.thousands(groups.notGrouped()) + " more leaks made elsewhere; the JSON report"
                    + " lists every one");
        }
        return out;
    }

    /** "leaked communicator 0x20 (...) by ncclCommInitRank at X, and 3 more alike: 0x21, 0x22, 0x23" */
    private static String line(LeakGroups.Group<ReportFile.LeakEntry> g) {
        String line = Words.leak(g.first());
        if (g.count() == 1) {
            return line;
        }
        StringBuilder out = new StringBuilder(line).append(", and ").append(Words.thousands(g.count() - 1))
                .append(" more alike: ");
        List<ReportFile.LeakEntry> next = g.listed();
        for (int i = 0; i < next.size(); i++) {
            out.append(i > 0 ? ", " : "").append(OneLine.of(next.get(i).handle()));
        }
        return out.append(g.count() - 1 > next.size() ? ", ..." : "").toString();
    }
}
