package dev.ncclguard.live;

import dev.ncclguard.agent.AgentState;
import dev.ncclguard.log.Log;
import dev.ncclguard.report.Report;
import dev.ncclguard.track.Tracker;
import dev.ncclguard.track.TrackerListener;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The live view of the tracker: counts for JMX, JFR events, and the MBean's registration. The
 * MBean is registered lazily, never in premain (creating the platform MBean server there starts
 * JMX and java.util.logging before the application has set them up, which breaks some
 * application servers): at an attach at once, since the application already runs; under
 * -javaagent at the first tracked NCCL or CUDA call. Either way on a thread of its own.
 */
public final class LiveMonitor implements TrackerListener {
    /** Whether JFR is in this runtime at all; a jlinked one may lack it. */
    private static final boolean JFR = ModuleLayer.boot().findModule("jdk.jfr").isPresent();

    private final Tracker tracker;
    // AtomicLong rather than LongAdder or AtomicBoolean: those pull some 30 VarHandle classes into premain
    private final AtomicLong eventsCreated = new AtomicLong();
    private final AtomicLong eventsDestroyed = new AtomicLong();
    private final AtomicLong streamsCreated = new AtomicLong();
    private final AtomicLong streamsDestroyed = new AtomicLong();
    private boolean registering;
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
        this.state = installed;
        installed.onExitReport(this::exitReport);
        if (!premain || tracker.sawAnyCall()) {
            registerSoon();
        }
    }

    @Override
    public void firstCall() {
        if (state != null) {
            registerSoon();
        }
    }

    private void registerSoon() {
        synchronized (this) {
            if (registering) {
                return;
            }
            registering = true;
        }
        AgentState installed = state;
        Thread t = new Thread(() -> {
            try {
                TrackerBean.register(installed, this);
            } catch (Throwable e) {
                // a runtime without java.management, or a security manager: the agent works without JMX
                Log.once("jmx", "no JMX view (" + TrackerMXBean.OBJECT_NAME + "): " + e);
            }
        }, "ncclguard-jmx");
        t.setDaemon(true);
        t.start();
    }

    @Override
    public void communicatorCreated(long handle, String api, String bridge, int rank, int nranks, int device,
            String commId) {
        if (JFR) {
            JfrEvents.communicatorCreated(handle, api, bridge, rank, nranks, device, commId);
        }
    }

    @Override
    public void communicatorReleased(long handle, String api, String bridge) {
        if (JFR) {
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

    private void exitReport(Report report) {
        if (JFR) {
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
