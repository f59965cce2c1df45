package dev.ncclguard.report;

import dev.ncclguard.cleanup.LeakOutcome;
import dev.ncclguard.config.Options;
import dev.ncclguard.track.CommLife;
import dev.ncclguard.track.HandleView;
import dev.ncclguard.track.Snapshot;
import dev.ncclguard.track.Tracker;
import java.time.Instant;
import java.util.List;
import java.util.Map;

/** Builds the report from the tracker's state: the exit report and the live one (JMX, dump) alike. */
public final class Reports {
    private Reports() {
    }

    /**
     * @param attachedAt   when the agent was attached to the running JVM; null when it started with it
     * @param beforeAttach what NCCL's RAS said at the attach; null without one
     * @param stillPending the exit probe's answers (empty for a live report: a running application's
     *                     GPU is not queried behind its back)
     * @param outcomes     cleanup's outcomes (empty unless cleanup ran)
     */
    public static Report build(Tracker tracker, Options options, Instant attachedAt, Report.BeforeAttach beforeAttach,
            Snapshot snapshot, List<CommLife> communicators, Map<HandleView, Boolean> stillPending,
            Map<HandleView, LeakOutcome> outcomes, boolean live) {
        boolean cleanup = options.action() == Options.Action.CLEANUP;
        return Report.builder()
                .action(cleanup ? Report.ACTION_CLEANUP : Report.ACTION_REPORT)
                .startedAt(Instant.ofEpochMilli(tracker.startedAtMillis()))
                .communicators(snapshot.commsCreated(), snapshot.commsReleased())
                .leaks(snapshot.leaks())
                .stillPending(stillPending)
                .cleanup(outcomes)
                .suppressions(options.suppressions())
                .communicators(communicators, tracker.communicatorsOmitted())
                .live(live)
                .attached(attachedAt, beforeAttach)
                .pid(ProcessHandle.current().pid())
                .host(HostName.get())
                .build();
    }

    /** What would be reported if the JVM exited now, without probing or cleaning anything. */
    public static Report live(Tracker tracker, Options options, Instant attachedAt, Report.BeforeAttach beforeAttach) {
        return build(tracker, options, attachedAt, beforeAttach, tracker.snapshot(), tracker.communicators(), Map.of(),
                Map.of(), true);
    }
}
