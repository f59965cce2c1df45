package dev.ncclguard.report;

import dev.ncclguard.bootstrap.state.LiveView;
import dev.ncclguard.config.Suppressions;
import dev.ncclguard.track.HandleView;
import dev.ncclguard.track.Tracker;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * The tracker's leaks of this moment for {@link dev.ncclguard.bootstrap.Live}: what a test left
 * behind. Only what the application itself observed counts (no exit probe), and suppressions
 * apply as in the exit report.
 */
public final class LiveReport implements LiveView {
    private final Tracker tracker;
    private final Suppressions suppressions;

    public LiveReport(Tracker tracker, Suppressions suppressions) {
        this.tracker = tracker;
        this.suppressions = suppressions;
    }

    @Override
    public List<String> leakIds() {
        List<String> ids = new ArrayList<>();
        for (HandleView view : counted(tracker.snapshot().leaks())) {
            ids.add(id(view));
        }
        return ids;
    }

    @Override
    public String describe(Collection<String> ids) {
        Set<String> wanted = new HashSet<>(ids);
        List<HandleView> chosen = new ArrayList<>();
        for (HandleView view : counted(tracker.snapshot().leaks())) {
            if (wanted.contains(id(view))) {
                chosen.add(view);
            }
        }
        if (chosen.isEmpty()) {
            return "";
        }
        Report report = Report.builder().leaks(chosen).build();
        return TextReportWriter.leakBlocks(report.leaks());
    }

    private List<HandleView> counted(List<HandleView> leaks) {
        if (suppressions.isEmpty()) {
            return leaks;
        }
        List<HandleView> out = new ArrayList<>(leaks.size());
        StackFrames.Cache stacks = new StackFrames.Cache();
        for (HandleView view : leaks) {
            if (suppressions.match(view.kind(), stacks.format(view.creation())) == null) {
                out.add(view);
            }
        }
        return out;
    }

    /** Kind, handle, device and creation time: one leak of one handle, across snapshots. */
    static String id(HandleView view) {
        return view.kind().word() + ":" + view.hexHandle() + ":" + view.device() + ":" + view.createdAtMillis();
    }
}
