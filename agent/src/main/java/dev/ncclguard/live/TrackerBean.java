package dev.ncclguard.live;

import dev.ncclguard.live.mxbean.TrackerMXBean;
import dev.ncclguard.report.JsonReportWriter;
import dev.ncclguard.report.TextReportWriter;
import java.lang.management.ManagementFactory;
import java.time.Instant;
import javax.management.InstanceAlreadyExistsException;
import javax.management.MBeanServer;
import javax.management.ObjectName;

/** {@link TrackerMXBean} over the installed agent. Only this class links javax.management. */
final class TrackerBean implements TrackerMXBean {
    private final AgentState state;
    private final LiveMonitor live;

    TrackerBean(AgentState state, LiveMonitor live) {
        this.state = state;
        this.live = live;
    }

    /** Registers with the platform MBean server (creating it if need be); false if one is already there. */
    static boolean register(AgentState state, LiveMonitor live) throws Exception {
        return register(ManagementFactory.getPlatformMBeanServer(), state, live);
    }

    static boolean register(MBeanServer server, AgentState state, LiveMonitor live) throws Exception {
        try {
            server.registerMBean(new TrackerBean(state, live), new ObjectName(OBJECT_NAME));
            return true;
        } catch (InstanceAlreadyExistsException e) {
            return false;
        }
    }

    // counts read as they are: a scrape reads every attribute, and a snapshot views every handle

    @Override
    public int getLiveCommunicators() {
        return state.tracker().liveCommunicators();
    }

    @Override
    public int getLiveEvents() {
        return state.tracker().liveEvents();
    }

    @Override
    public int getLiveStreams() {
        return state.tracker().liveStreams();
    }

    @Override
    public long getCommunicatorsCreated() {
        return state.tracker().communicatorsCreated();
    }

    @Override
    public long getCommunicatorsReleased() {
        return state.tracker().communicatorsReleased();
    }

    @Override
    public double getOldestLiveCommunicatorAgeSeconds() {
        long oldest = state.tracker().oldestLiveCommunicatorMillis();
        return oldest == 0 ? 0 : Math.max(0, System.currentTimeMillis() - oldest) / 1000.0;
    }

    @Override
    public int getEventsPendingTooLong() {
        return state.tracker().eventsPendingLongerThan(state.options().pendingThreshold().toMillis());
    }

    @Override
    public double getPendingThresholdSeconds() {
        return state.options().pendingThreshold().toMillis() / 1000.0;
    }

    @Override
    public long getStreamOpsPending() {
        return state.tracker().streamOpsPending();
    }

    @Override
    public double getNcclOpsInFlight() {
        long n = state.tracker().opsInFlight();
        return n < 0 ? Double.NaN : n;
    }

    @Override
    public long getEventsCreated() {
        // with those native code made and the tracker never took over (no upcall: NativeCreations)
        return live.eventsCreated() + state.tracker().unadoptedEventCounts()[0];
    }

    @Override
    public long getEventsDestroyed() {
        return live.eventsDestroyed() + state.tracker().unadoptedEventCounts()[1];
    }

    @Override
    public long getStreamsCreated() {
        return live.streamsCreated();
    }

    @Override
    public long getStreamsDestroyed() {
        return live.streamsDestroyed();
    }

    @Override
    public long getCleanupsDone() {
        return state.cleaned();
    }

    @Override
    public long getCleanupsFailed() {
        return state.cleanupFailed();
    }

    @Override
    public String getTrackingSince() {
        return Instant.ofEpochMilli(state.tracker().startedAtMillis()).toString();
    }

    @Override
    public boolean isAttached() {
        return state.attachedAt() != null;
    }

    @Override
    public String getOptions() {
        return state.options().toString();
    }

    @Override
    public String reportJson() {
        return JsonReportWriter.toJson(state.liveReport());
    }

    @Override
    public String reportText() {
        return TextReportWriter.toText(state.liveReport());
    }

    @Override
    public long getLiveMemory() {
        return state.tracker().resourceCounts().memory();
    }

    @Override
    public long getLiveMemoryBytes() {
        return state.tracker().resourceCounts().memoryBytes();
    }

    @Override
    public long getLiveRegistrations() {
        return state.tracker().resourceCounts().registrations();
    }

    @Override
    public long getRegisteredBytes() {
        return state.tracker().resourceCounts().registeredBytes();
    }

    @Override
    public long getLiveWindows() {
        return state.tracker().resourceCounts().windows();
    }

    @Override
    public long getWindowBytes() {
        return state.tracker().resourceCounts().windowBytes();
    }

    @Override
    public long getLiveDeviceCommunicators() {
        return state.tracker().resourceCounts().deviceCommunicators();
    }
}
