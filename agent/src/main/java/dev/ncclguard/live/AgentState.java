package dev.ncclguard.live;

import dev.ncclguard.cleanup.LeakOutcome;
import dev.ncclguard.config.Options;
import dev.ncclguard.report.Report;
import dev.ncclguard.report.Reports;
import dev.ncclguard.track.CommLife;
import dev.ncclguard.track.HandleView;
import dev.ncclguard.track.Snapshot;
import dev.ncclguard.track.Tracker;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

/**
 * The agent installed in this JVM: its tracker, its options (a later attach may change them, so
 * the exit hook reads them here at exit), how it came (with the JVM, or attached to it) and what it
 * instrumented. One per JVM; {@link #current()} is null until the agent is installed.
 */
public final class AgentState {
    private static volatile AgentState current;

    private final Tracker tracker;
    private volatile Options options;
    private final Instant attachedAt;
    private final Map<String, List<String>> instrumented;
    private final List<String> bridges;
    private volatile Report.BeforeAttach beforeAttach;
    private volatile Consumer<Report> exitReportListener;
    private final AtomicLong cleaned = new AtomicLong();
    private final AtomicLong cleanupFailed = new AtomicLong();

    /**
     * @param instrumented per class the hooks went into, what became of each loaded copy
     * @param bridges      a line per bridge installed apart from those hooks: what it reaches
     */
    public AgentState(Tracker tracker, Options options, Instant attachedAt, Map<String, List<String>> instrumented,
            List<String> bridges) {
        this.tracker = Objects.requireNonNull(tracker);
        this.options = Objects.requireNonNull(options);
        this.attachedAt = attachedAt;
        this.instrumented = instrumented;
        this.bridges = List.copyOf(bridges);
    }

    /** The installed agent, or null. */
    public static AgentState current() {
        return current;
    }

    public static void publish(AgentState state) {
        current = state;
    }

    public Tracker tracker() {
        return tracker;
    }

    /** The options in effect now. */
    public Options options() {
        return options;
    }

    /**
     * The options in effect with those of {@code args} changed: a key not given keeps its value
     * (rather than falling back to its system property, environment variable or default).
     *
     * @throws OptionsException on a bad key or value, with the one line to show
     */
    public Options merge(String args) {
        return options.with(args); // not a re-parse of toString: a config file's values may hold ','
    }

    /**
     * Puts new options in effect. What is read at exit (action, report, text, exit-code, timeout)
     * takes effect then; stacks applies to handles created from now on; logging at once.
     */
    public synchronized void update(Options newOptions) {
        this.options = Objects.requireNonNull(newOptions);
        tracker.stacks(newOptions.stacks());
        tracker.stackDepot(newOptions.stackDepot());
        dev.ncclguard.log.Log.configure(newOptions.logging() == Options.Logging.APPLICATION);
    }

    /** When the agent was attached to this running JVM; null when it started with the JVM (-javaagent). */
    public Instant attachedAt() {
        return attachedAt;
    }

    /** One line per bridge or hook: what was instrumented, and what could not be. */
    public List<String> coverage() {
        return Coverage.describe(instrumented, bridges); // built when asked: premain pays nothing for it
    }

    /** What NCCL's RAS said at the attach; null until asked (and always without an attach). */
    public Report.BeforeAttach beforeAttach() {
        return beforeAttach;
    }

    public void beforeAttach(Report.BeforeAttach learned) {
        this.beforeAttach = learned;
    }

    /** What would be reported if the JVM exited now, without probing or cleaning anything (JMX, dump). */
    public Report liveReport() {
        return Reports.live(tracker, options, attachedAt, beforeAttach);
    }

    /**
     * The exit report of the tracker's state {@code snapshot}, with the options in effect now.
     *
     * @param stillPending the exit probe's answers
     * @param outcomes     cleanup's outcomes (empty unless cleanup ran)
     */
    public Report exitReport(Snapshot snapshot, List<CommLife> communicators, Map<HandleView, Boolean> stillPending,
            Map<HandleView, LeakOutcome> outcomes) {
        return Reports.build(tracker, options, attachedAt, beforeAttach, snapshot, communicators, stillPending, outcomes,
                false);
    }

    /** Told of the exit report once it is written (for JFR events); must not throw. */
    public void onExitReport(Consumer<Report> listener) {
        this.exitReportListener = Objects.requireNonNull(listener);
    }

    public void exitReported(Report report) {
        cleaned.addAndGet(report.summary().cleaned());
        cleanupFailed.addAndGet(report.summary().cleanupFailed());
        Consumer<Report> listener = exitReportListener;
        if (listener == null) {
            return;
        }
        try {
            listener.accept(report);
        } catch (RuntimeException | LinkageError e) {
            dev.ncclguard.log.Log.once("exit-report-listener", "live view of the exit report failed: " + e);
        }
    }

    /** Leaks that cleanup released (action=cleanup, at exit). */
    public long cleaned() {
        return cleaned.get();
    }

    /** Leaks that cleanup failed to release or that timed out. */
    public long cleanupFailed() {
        return cleanupFailed.get();
    }
}
