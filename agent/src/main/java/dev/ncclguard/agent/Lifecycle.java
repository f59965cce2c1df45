package dev.ncclguard.agent;

import dev.ncclguard.bootstrap.Hooks;
import dev.ncclguard.cleanup.Cleanup;
import dev.ncclguard.cleanup.CleanupRun;
import dev.ncclguard.cleanup.CudaRuntime;
import dev.ncclguard.cleanup.ExitProbe;
import dev.ncclguard.cleanup.LeakOutcome;
import dev.ncclguard.cleanup.ProcessExit;
import dev.ncclguard.config.Options;
import dev.ncclguard.config.OutputNames;
import dev.ncclguard.live.AgentState;
import dev.ncclguard.log.Log;
import dev.ncclguard.report.JsonReportWriter;
import dev.ncclguard.report.NumberedFiles;
import dev.ncclguard.report.Report;
import dev.ncclguard.report.TextReportWriter;
import dev.ncclguard.track.CommLife;
import dev.ncclguard.track.HandleView;
import dev.ncclguard.track.Snapshot;
import dev.ncclguard.track.Tracker;
import java.lang.instrument.Instrumentation;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * What happens at JVM exit: probe, cleanup (action=cleanup), reports, exit code. Registered in one
 * of the JVM's system shutdown slots after the one that runs the application's shutdown hooks, so
 * it starts only once those have all finished, and before the C libraries' atexit teardown.
 */
final class Lifecycle implements Runnable {
    /** The JVM runs system hooks by slot; slot 1 runs every application hook. Ours goes last. */
    private static final int LAST_SLOT = 9;
    private static final int FIRST_FREE_SLOT = 3;
    /** Share of the timeout the exit probe may use; it answers in microseconds unless wedged. */
    private static final long PROBE_MAX_NANOS = TimeUnit.SECONDS.toNanos(1);

    private final AgentState state;
    private final Tracker tracker;

    Lifecycle(AgentState state) {
        this.state = state;
        this.tracker = state.tracker();
    }

    void registerExitHook(Instrumentation inst) {
        Runnable hook = this;
        try {
            Agent.openJdkInternals(inst);
            for (int slot = LAST_SLOT; slot >= FIRST_FREE_SLOT; slot--) {
                try {
                    JdkInternals.registerShutdownHook(slot, hook);
                    JfrShutdown.deferUntilAfterReport(inst);
                    return;
                } catch (InternalError e) {
                    // slot taken by the JDK itself: try the one before
                }
            }
            throw new IllegalStateException("no free system shutdown slot");
        } catch (RuntimeException | LinkageError e) {
            // Still report at exit, but possibly while application hooks run: say so once.
            Log.warn("cannot order the exit report after the application's shutdown hooks (" + e
                    + "); a handle released in an application hook may be reported as leaked");
            Runtime.getRuntime().addShutdownHook(new Thread(hook, "ncclguard-exit"));
        }
    }

    /** The exit hook itself: a class rather than a method reference, which costs more in premain. */
    @Override
    public void run() {
        atExitSafely();
    }

    private void atExitSafely() {
        try {
            atExit();
        } catch (Throwable t) {
            Log.error("exit report failed", t);
        } finally {
            JfrShutdown.runDeferred();
        }
    }

    private void atExit() {
        // read now: a later attach may have changed them since the hook was registered
        Options options = state.options();
        if (options.action() == Options.Action.OFF) {
            return;
        }
        if (!tracker.sawAnyCall() && options.report() == null) {
            return; // never touched NCCL or CUDA, and no JSON report asked for: nothing to say
        }
        // the application's hooks have run: its logging may be stopped, so exit lines may need stderr
        Log.exiting();
        long start = System.nanoTime();
        long deadline = start + options.timeout().toNanos();
        Snapshot snapshot = tracker.snapshot();
        List<CommLife> communicators = tracker.communicators();
        if (snapshot.internalErrors() > 0) {
            Log.error(snapshot.internalErrors() + " internal tracking error(s); the first", snapshot.firstInternalError());
        }
        List<HandleView> leaks = snapshot.leaks();
        boolean cleanup = options.action() == Options.Action.CLEANUP;
        // no leak, no question for the library: a clean run starts no probe thread at exit
        ExitProbe.Result probe = leaks.isEmpty() ? new ExitProbe.Result(Map.of(), false)
                : ExitProbe.probe(leaks, Math.min(deadline, start + PROBE_MAX_NANOS));
        Map<HandleView, Boolean> stillPending = probe.stillPending();
        CleanupRun run = CleanupRun.NOTHING;
        if (cleanup && !leaks.isEmpty()) {
            long left = Math.max(0, deadline - System.nanoTime());
            run = Cleanup.execute(leaks, java.time.Duration.ofNanos(left), CudaRuntime.from(leaks));
        }
        Map<HandleView, LeakOutcome> outcomes = run.outcomes();
        Report report = state.exitReport(snapshot, communicators, stillPending, outcomes);
        writeReports(options, report, report.pid(), report.host(), tracker.sawAnyCall());
        state.exitReported(report);
        exitWithCodeIfAsked(options, report, probe.leftHanging() || run.leftHanging(), leaks);
    }

    private static void writeReports(Options options, Report report, long pid, String host, boolean sawAnyCall) {
        NumberedFiles.Names names = new NumberedFiles.Names(pid, host,
                OutputNames.startTime(report.startedAt().toEpochMilli()), System.getenv());
        String json = options.report();
        long number = -1; // what %n took for the JSON report: the text report takes the same
        if (json != null) {
            number = NumberedFiles.write(json, JsonReportWriter.content(report), "report", names, -1);
        }
        // A JVM that never touched NCCL or CUDA gets no text at all: the agent stays invisible.
        if (!sawAnyCall && !report.hasLeaks()) {
            return;
        }
        String notLogged = options.textToLog() ? Log.logReport(TextReportWriter.logEntries(report)) : null;
        if (options.textToStderr() || notLogged != null) {
            if (notLogged != null) {
                System.err.println("ncclguard: text=log: " + notLogged);
            }
            System.err.print(TextReportWriter.toText(report));
            System.err.flush();
        } else {
            String text = options.textPath(pid, host) == null ? null : options.text();
            if (text != null) {
                NumberedFiles.write(text, TextReportWriter.toBytes(report), "text", names, number);
            }
        }
    }

    /**
     * exit-code: only a JVM that was exiting 0 is turned into a failure; a failure is never masked.
     * With a native call left hanging, the process ends here with the status it was exiting with.
     */
    private static void exitWithCodeIfAsked(Options options, Report report, boolean hanging, List<HandleView> leaks) {
        int code = options.exitCode();
        int status = Hooks.exitStatus;
        boolean exitingZero = (status == -1 || status == 0) && !Hooks.mainThreadFailed;
        boolean override = code != 0 && report.hasLeaks() && exitingZero;
        if (hanging || override) {
            JfrShutdown.runDeferred(); // the process ends here: JFR's dump must run before
        }
        if (hanging) {
            ProcessExit.immediately(override ? code : exitingZero ? 0 : status == -1 ? 1 : status, leaks);
        }
        if (override) {
            Runtime.getRuntime().halt(code);
        }
    }
}
