package dev.ncclguard.live.mxbean;

/**
 * The agent's JMX view, {@code dev.ncclguard:type=Tracker}: what it tracks now, what it has seen
 * since it started, and the report as it would be if the JVM exited now.
 */
public interface TrackerMXBean {
    /** The MBean's object name. */
    String OBJECT_NAME = "dev.ncclguard:type=Tracker";

    int getLiveCommunicators();

    int getLiveEvents();

    int getLiveStreams();

    long getCommunicatorsCreated();

    long getCommunicatorsReleased();

    long getEventsCreated();

    long getEventsDestroyed();

    long getStreamsCreated();

    long getStreamsDestroyed();

    /** Leaks released by action=cleanup (at exit). */
    long getCleanupsDone();

    /** Leaks action=cleanup failed to release or gave up on. */
    long getCleanupsFailed();

    /** Seconds since the oldest communicator alive now was created; 0 when none is alive. */
    double getOldestLiveCommunicatorAgeSeconds();

    /**
     * Events whose last record has stayed pending (never seen complete) for
     * {@link #getPendingThresholdSeconds()} or more. The agent learns how long by looking: the
     * first read of this attribute that sees a record pending starts its clock, so read it
     * periodically (every scrape does).
     */
    int getEventsPendingTooLong();

    /** The option pending-threshold, in seconds. */
    double getPendingThresholdSeconds();

    /** Ops (collectives, event records, waits) enqueued on live streams and not seen complete. */
    long getStreamOpsPending();

    /**
     * NCCL's operations in flight as its profiler plugin counts them (the native part's profiler
     * bridge); NaN while nothing reports them.
     */
    double getNcclOpsInFlight();

    /** ISO-8601: when tracking started (the JVM's start, or the attach). */
    String getTrackingSince();

    /** Whether the agent was attached to the running JVM rather than started with it. */
    boolean isAttached();

    /** The options in effect, key=value,... */
    String getOptions();

    /** The live report, schema ncclguard-report/1 with "live": true. */
    String reportJson();

    /** The live report as text. */
    String reportText();

    // --- NCCL's other resources (NCCL 2.28/2.29): what grows in a service that never releases them ---

    /** ncclMemAlloc allocations not freed. */
    long getLiveMemory();

    /** Their bytes, as asked for. */
    long getLiveMemoryBytes();

    /** Buffer registrations (ncclCommRegister) of live communicators not deregistered. */
    long getLiveRegistrations();

    /** Bytes those registrations cover. */
    long getRegisteredBytes();

    /** Windows (ncclCommWindowRegister) of live communicators not deregistered. */
    long getLiveWindows();

    /** Bytes those windows cover. */
    long getWindowBytes();

    /** Device communicators (ncclDevCommCreate) of live communicators not destroyed. */
    long getLiveDeviceCommunicators();
}
