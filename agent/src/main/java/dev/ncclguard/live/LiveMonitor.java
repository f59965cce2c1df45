package dev.ncclguard.live;

import dev.ncclguard.config.Options;
import dev.ncclguard.live.mxbean.TrackerMXBean;
import dev.ncclguard.log.Log;
import dev.ncclguard.report.JsonReportWriter;
import dev.ncclguard.report.Report;
import dev.ncclguard.report.TextReportWriter;
import dev.ncclguard.track.Tracker;
import dev.ncclguard.track.TrackerListener;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

/**
 * The live view of the tracker: counts for JMX, JFR events, and the MBean's registration. The
 * MBean is registered lazily, never in premain (creating the platform MBean server there starts
 * JMX and java.util.logging before the application has set them up, which breaks some
 * application servers): at an attach at once, since the application already runs; under
 * -javaagent after the first tracked NCCL or CUDA call (see REGISTER_ANYWAY_MILLIS). Either way on a thread of its own.
 */
public final class LiveMonitor implements TrackerListener, Consumer<Report> {
    /** Whether JFR is in this runtime at all; a jlinked one may lack it. */
    private static final boolean JFR = ModuleLayer.boot().findModule("jdk.jfr").isPresent();

    /**
     * Under -javaagent the MBean waits for a platform MBean server that someone else made (the
     * application, a JMX agent, `dump` starting the local management agent) or for the JVM to have
     * run {@link #REGISTER_ANYWAY_MILLIS}: creating that server initializes every platform MXBean
     * and JFR's, some 300 ms of CPU that a short job or test would pay for nothing.
     */
    private static final long REGISTER_ANYWAY_MILLIS = 30_000;
    private static final long SERVER_POLL_MILLIS = 250;

    private final Tracker tracker;
    // AtomicLong rather than LongAdder or AtomicBoolean: those pull some 30 VarHandle classes into premain
    private final AtomicLong eventsCreated = new AtomicLong();
    private final AtomicLong eventsDestroyed = new AtomicLong();
    private final AtomicLong streamsCreated = new AtomicLong();
    private final AtomicLong streamsDestroyed = new AtomicLong();
    private boolean registering;
    private volatile boolean waitForServer;
    private volatile AgentState state;

    private LiveMonitor(Tracker tracker) {
        this.tracker = tracker;
    }

    /** Starts listening to {@code tracker}: before it sees its first call, so that the counts are whole. */
    public static LiveMonitor listenTo(Tracker tracker) {
        LiveMonitor view = new LiveMonitor(tracker);
        tracker.listener(view);
        return view;
    }

    /** The agent is installed: the MBean may be registered now (attach) or at the first call (premain). */
    public void started(AgentState installed, boolean premain) {
        this.waitForServer = premain;
        this.state = installed;
        installed.onExitReport(this); // itself, not a method reference: premain
        if (!premain || tracker.sawAnyCall()) {
            registerSoon();
        }
    }

    @Override
    public void firstCall() {
        // the thread that uses NCCL or CUDA first is the application's: its SLF4J is reached through it
        Log.applicationLoader(Thread.currentThread().getContextClassLoader());
        if (state != null) {
            registerSoon();
        }
    }


    /**
     * Under -javaagent, sleeps before the first look: a short job ends before it and never loads
     * javax.management at all.
     */
    private void awaitServer() throws InterruptedException {
        long deadline = System.currentTimeMillis() + REGISTER_ANYWAY_MILLIS;
        while (waitForServer && System.currentTimeMillis() < deadline) {
            Thread.sleep(SERVER_POLL_MILLIS);
            if (!javax.management.MBeanServerFactory.findMBeanServer(null).isEmpty()) {
                return;
            }
        }
    }

    private void registerSoon() {
        synchronized (this) {
            if (registering) {
                return;
            }
            registering = true;
        }
        Thread t = new Thread(new Registration(this, state), "ncclguard-jmx");
        t.setDaemon(true);
        t.start();
    }

    /** The MBean's registration, on its own thread; a class rather than a lambda, which costs more at the first call. */
    private static final class Registration implements Runnable {
        private final LiveMonitor live;
        private final AgentState installed;

        Registration(LiveMonitor live, AgentState installed) {
            this.live = live;
            this.installed = installed;
        }

        @Override
        public void run() {
            if (live.waitForServer) {
                warmExitReport(installed);
            }
            try {
                live.awaitServer();
                TrackerBean.register(installed, live);
            } catch (Throwable e) {
                // a runtime without java.management, or a security manager: the agent works without JMX
                Log.once("jmx", "no JMX view (" + TrackerMXBean.OBJECT_NAME + "): " + e);
            }
        }
    }

    /**
     * Builds a live report once, writes it as the exit will, and drops it: the exit report's
     * classes (and the JDK's it uses) load here, beside the application, rather than in the exit
     * hook, where the process waits for them (20-30 ms there at start-up, 3-5 ms after this).
     * Only after a tracked call: a JVM that makes none gets no exit report.
     */
    private static void warmExitReport(AgentState installed) {
        try {
            Options options = installed.options();
            Report report = installed.liveReport();
            if (options.textToLog()) {
                TextReportWriter.logEntries(report);
            }
            if (!options.text().equals("none")) {
                TextReportWriter.toText(report);
            }
            if (options.report() != null) {
                JsonReportWriter.toBytes(report);
            }
        } catch (Throwable t) {
            // nothing lost: the exit report loads what it needs itself
        }
    }

    @Override
    public void communicatorCreated(long handle, String api, String bridge, int rank, int nranks, int device,
            String commId) {
        if (JFR && JfrGate.started()) {
            JfrEvents.communicatorCreated(handle, api, bridge, rank, nranks, device, commId);
        }
    }

    @Override
    public void communicatorReleased(long handle, String api, String bridge) {
        if (JFR && JfrGate.started()) {
            JfrEvents.communicatorReleased(handle, api, bridge);
        }
    }

    @Override
    public void eventCreated(long handle) {
        eventsCreated.incrementAndGet();
    }

    @Override
    public void eventDestroyed(long handle) {
        eventsDestroyed.incrementAndGet();
    }

    @Override
    public void streamCreated(long handle) {
        streamsCreated.incrementAndGet();
    }

    @Override
    public void streamDestroyed(long handle) {
        streamsDestroyed.incrementAndGet();
    }

    /** Hears of the exit report, for JFR. */
    @Override
    public void accept(Report report) {
        if (JFR && JfrGate.started()) {
            JfrEvents.exitReport(report);
        }
    }

    long eventsCreated() {
        return eventsCreated.get();
    }

    long eventsDestroyed() {
        return eventsDestroyed.get();
    }

    long streamsCreated() {
        return streamsCreated.get();
    }

    long streamsDestroyed() {
        return streamsDestroyed.get();
    }
}
