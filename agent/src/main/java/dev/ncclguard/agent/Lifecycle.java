package dev.ncclguard.agent;

import dev.ncclguard.bootstrap.state.HookState;
import dev.ncclguard.bridge.interposer.NativePart;
import dev.ncclguard.cleanup.Cleanup;
import dev.ncclguard.cleanup.CleanupRun;
import dev.ncclguard.cleanup.CudaRuntime;
import dev.ncclguard.cleanup.ExitProbe;
import dev.ncclguard.cleanup.InFlightWork;
import dev.ncclguard.cleanup.LeakOutcome;
import dev.ncclguard.cleanup.ProcessExit;
import dev.ncclguard.config.Options;
import dev.ncclguard.live.AgentState;
import dev.ncclguard.log.Log;
import dev.ncclguard.report.Report;
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

    /**
     * Under cleanup, the probe's share of the timeout: cleanup polls the same handles itself, and
     * 200,000 events asked one by one must not leave it no time at all.
     */
    private static final double PROBE_CLEANUP_SHARE = 0.2;

    /**
     * What a leak costs after the last native call of the exit: cleanup settling its outcome, the
     * report built, and its JSON (about 500 bytes) written and flushed to disk. Measured on 200,000
     * events (docs/performance.md, "The exit's report under timeout"), rounded up.
     */
    static final long REPORT_NANOS_PER_LEAK = 6_000;
    /** The most of the timeout kept from the probe and cleanup for the report: they need time too. */
    static final double REPORT_MAX_SHARE = 0.5;
    /**
     * How long past the timeout the report write may go on before it is abandoned: the fixed margin
     * of the exit's bound, for a report bigger than its reserve and a disk slower than measured.
     */
    static final long WRITE_MARGIN_NANOS = TimeUnit.SECONDS.toNanos(2);

    private final AgentState state;
    private final Tracker tracker;
    /** The native part, told at the end that the JVM is dying; null without one. */
    private final NativePart nativePart;

    Lifecycle(AgentState state, NativePart nativePart) {
        this.state = state;
        this.tracker = state.tracker();
        this.nativePart = nativePart;
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
            if (nativePart != null) {
                // after cleanup (a native release of a claimed handle must still park) and the report:
                // from here on the native library only forwards, and never calls into the JVM
                nativePart.dying();
            }
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
        long timeout = options.timeout().toNanos();
        Snapshot snapshot = tracker.snapshot();
        List<CommLife> communicators = tracker.communicators();
        if (snapshot.internalErrors() > 0) {
            Log.error(snapshot.internalErrors() + " internal tracking error(s); the first", snapshot.firstInternalError());
        }
        List<HandleView> leaks = snapshot.leaks();
        // the probe and cleanup end early enough for the report to be written within the timeout
        long deadline = start + timeout - reportReserveNanos(timeout, leaks.size());
        boolean cleanup = options.action() == Options.Action.CLEANUP;
        // no leak, no question for the library: a clean run starts no probe thread at exit
        ExitProbe.Result probe = leaks.isEmpty() ? new ExitProbe.Result(Map.of(), false)
                : ExitProbe.probe(leaks, Math.min(cleanup ? Math.min(deadline, start + (long) (timeout * PROBE_CLEANUP_SHARE))
                        : deadline, start + PROBE_MAX_NANOS));
        Map<HandleView, Boolean> stillPending = probe.stillPending();
        CleanupRun run = CleanupRun.NOTHING;
        if (cleanup && !leaks.isEmpty()) {
            long left = Math.max(0, deadline - System.nanoTime());
            run = Cleanup.execute(leaks, java.time.Duration.ofNanos(left), CudaRuntime.from(leaks), new InFlight(tracker));
        }
        Map<HandleView, LeakOutcome> outcomes = run.outcomes();
        Report report = state.exitReport(snapshot, communicators, stillPending, outcomes);
        // a class of its own, loaded only here: in this one the verifier would load its types at premain
        boolean written = ExitReports.writeBy(options, report, tracker.sawAnyCall(), start + timeout + WRITE_MARGIN_NANOS);
        state.exitReported(report);
        if (nativePart != null) {
            nativePart.dying(); // before a halt or _exit below too
        }
        exitWithCodeIfAsked(options, report, !written, probe.leftHanging() || run.leftHanging(), leaks, nativePart);
    }

    /** The end of the timeout kept for the report of {@code leaks} leaks. */
    static long reportReserveNanos(long timeoutNanos, int leaks) {
        return Math.min((long) (timeoutNanos * REPORT_MAX_SHARE), leaks * REPORT_NANOS_PER_LEAK);
    }

    /** What NCCL's profiler plugin says is in flight on a communicator, for cleanup. A class: no lambda at exit. */
    private static final class InFlight implements InFlightWork {
        private final Tracker tracker;

        InFlight(Tracker tracker) {
            this.tracker = tracker;
        }

        @Override
        public long count(HandleView comm) {
            return tracker.inFlightNow(comm);
        }
    }

    /**
     * exit-code: only a JVM that was exiting 0 is turned into a failure; a failure is never masked.
     * A report that could not be written fails the run as a leak does: CI must not read a lost
     * report as a clean one. With a native call left hanging, the process ends here with the
     * status it was exiting with: through exit(3) with the native part's watchdog armed, else _exit.
     */
    private static void exitWithCodeIfAsked(Options options, Report report, boolean lost, boolean hanging,
                                            List<HandleView> leaks, NativePart nativePart) {
        int code = options.exitCode();
        int status = HookState.exitStatus;
        boolean exitingZero = (status == -1 || status == 0) && !HookState.mainThreadFailed;
        boolean override = code != 0 && (report.hasLeaks() || lost) && exitingZero;
        if (hanging || override) {
            JfrShutdown.runDeferred(); // the process ends here: JFR's dump must run before
        }
        if (hanging) {
            ProcessExit.afterExitHandlers(override ? code : exitingZero ? 0 : status == -1 ? 1 : status, leaks, nativePart);
        }
        if (override) {
            Runtime.getRuntime().halt(code);
        }
    }
}
