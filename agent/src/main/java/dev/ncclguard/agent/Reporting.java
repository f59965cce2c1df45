package dev.ncclguard.agent;

import dev.ncclguard.cleanup.CleanupResult;
import dev.ncclguard.report.HostName;
import dev.ncclguard.report.Report;
import dev.ncclguard.track.CommLife;
import dev.ncclguard.track.HandleView;
import dev.ncclguard.track.Snapshot;
import dev.ncclguard.track.Tracker;
import java.time.Instant;
import java.util.List;
import java.util.Map;

/** Builds the report from the tracker's state: the exit report and the live one (JMX, dump) alike. */
public final class Reporting {
    private Reporting() {
    }

    /**
     * @param stillPending the exit probe's answers (empty for a live report: a running application's
     *                     GPU is not queried behind its back)
     * @param outcomes     cleanup's outcomes (empty unless cleanup ran)
     */
    public static Report build(AgentState state, Snapshot snapshot, List<CommLife> communicators,
            Map<HandleView, Boolean> stillPending, Map<HandleView, CleanupResult> outcomes, boolean live) {
        Options options = state.options();
        boolean cleanup = options.action() == Options.Action.CLEANUP;
        return Report.builder()
                .action(cleanup ? Report.ACTION_CLEANUP : Report.ACTION_REPORT)
                .startedAt(Instant.ofEpochMilli(state.tracker().startedAtMillis()))
                .communicators(snapshot.commsCreated(), snapshot.commsReleased())
                .leaks(snapshot.leaks())
                .stillPending(stillPending)
                .cleanup(outcomes)
                .suppressions(options.suppressions())
                .communicators(communicators, state.tracker().communicatorsOmitted())
                .live(live)
                .attached(state.attachedAt(), state.beforeAttach())
                .pid(ProcessHandle.current().pid())
                .host(HostName.get())
                .build();
    }

    /** What would be reported if the JVM exited now, without probing or cleaning anything. */
    public static Report live(AgentState state) {
        Tracker tracker = state.tracker();
        return build(state, tracker.snapshot(), tracker.communicators(), Map.of(), Map.of(), true);
    }
}
