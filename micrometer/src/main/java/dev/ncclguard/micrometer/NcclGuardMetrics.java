package dev.ncclguard.micrometer;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.TimeGauge;
import io.micrometer.core.instrument.binder.MeterBinder;
import java.lang.management.ManagementFactory;
import java.util.List;
import java.util.concurrent.TimeUnit;
import javax.management.JMException;
import javax.management.MBeanServer;
import javax.management.MalformedObjectNameException;
import javax.management.ObjectName;

/**
 * The ncclguard agent's live numbers as Micrometer meters, for applications that use Micrometer:
 * {@code new NcclGuardMetrics().bindTo(registry)}. Each meter reads an attribute of the agent's
 * MBean {@code dev.ncclguard:type=Tracker} when it is read, so this class never links the agent
 * and the numbers are the ones jmx_exporter exports (docs/metrics.md); under Micrometer's
 * Prometheus registry the names come out as the repository's jmx_exporter rules name them
 * ({@code ncclguard.communicator.creations} as {@code ncclguard_communicator_creations_total}).
 *
 * <p>The agent registers its MBean lazily (after the first NCCL or CUDA call, once a platform MBean
 * server exists, which this class makes); until then, and in a JVM without the agent, each meter
 * reads NaN.
 */
public final class NcclGuardMetrics implements MeterBinder {
    static final String OBJECT_NAME = "dev.ncclguard:type=Tracker";

    /** How a meter reads its attribute: a counter, a gauge, or a gauge of seconds. */
    enum Type { COUNTER, GAUGE, SECONDS }

    /** One meter: its name, the MBean attribute it reads, and what it counts. */
    record Metric(String name, String attribute, Type type, String unit, String description) {
    }

    /** Every meter; each numeric attribute of the MBean has one (a test holds the two together). */
    static final List<Metric> METRICS = List.of(
            new Metric("ncclguard.communicator.creations", "CommunicatorsCreated", Type.COUNTER, "communicators",
                    "NCCL communicators created (ncclCommInitRank, InitAll, InitRankConfig, InitRankScalable, Split, Shrink)"),
            new Metric("ncclguard.communicator.releases", "CommunicatorsReleased", Type.COUNTER, "communicators",
                    "NCCL communicators the application destroyed or aborted"),
            new Metric("ncclguard.event.creations", "EventsCreated", Type.COUNTER, "events", "CUDA events created"),
            new Metric("ncclguard.event.destructions", "EventsDestroyed", Type.COUNTER, "events", "CUDA events destroyed"),
            new Metric("ncclguard.stream.creations", "StreamsCreated", Type.COUNTER, "streams", "CUDA streams created"),
            new Metric("ncclguard.stream.destructions", "StreamsDestroyed", Type.COUNTER, "streams", "CUDA streams destroyed"),
            new Metric("ncclguard.cleanup.releases", "CleanupsDone", Type.COUNTER, "handles",
                    "leaks released by action=cleanup at exit"),
            new Metric("ncclguard.cleanup.failures", "CleanupsFailed", Type.COUNTER, "handles",
                    "leaks action=cleanup failed to release or gave up on at exit"),
            new Metric("ncclguard.communicators.live", "LiveCommunicators", Type.GAUGE, "communicators",
                    "NCCL communicators alive now (created, not destroyed or aborted)"),
            new Metric("ncclguard.events.live", "LiveEvents", Type.GAUGE, "events", "CUDA events alive now"),
            new Metric("ncclguard.streams.live", "LiveStreams", Type.GAUGE, "streams", "CUDA streams alive now"),
            new Metric("ncclguard.communicator.oldest.age", "OldestLiveCommunicatorAgeSeconds", Type.SECONDS, null,
                    "time since the oldest communicator alive now was created (0 when none is)"),
            new Metric("ncclguard.events.pending.too.long", "EventsPendingTooLong", Type.GAUGE, "events",
                    "CUDA events whose last record has stayed pending, never seen complete, for the pending threshold or more"),
            new Metric("ncclguard.pending.threshold", "PendingThresholdSeconds", Type.SECONDS, null,
                    "the agent option pending-threshold"),
            new Metric("ncclguard.stream.ops.pending", "StreamOpsPending", Type.GAUGE, "operations",
                    "work enqueued on live CUDA streams (collectives, event records, waits) not seen complete"),
            new Metric("ncclguard.nccl.ops.in.flight", "NcclOpsInFlight", Type.GAUGE, "operations",
                    "NCCL operations in flight as its profiler plugin counts them (NaN while nothing reports them)"),
            new Metric("ncclguard.nccl.memory.live", "LiveMemory", Type.GAUGE, "allocations",
                    "ncclMemAlloc allocations not freed"),
            new Metric("ncclguard.nccl.memory.live.bytes", "LiveMemoryBytes", Type.GAUGE, "bytes",
                    "bytes of those allocations, as asked for"),
            new Metric("ncclguard.registrations.live", "LiveRegistrations", Type.GAUGE, "registrations",
                    "buffer registrations (ncclCommRegister) of live communicators not deregistered"),
            new Metric("ncclguard.registered.bytes", "RegisteredBytes", Type.GAUGE, "bytes",
                    "bytes those registrations cover"),
            new Metric("ncclguard.windows.live", "LiveWindows", Type.GAUGE, "windows",
                    "windows (ncclCommWindowRegister) of live communicators not deregistered"),
            new Metric("ncclguard.window.bytes", "WindowBytes", Type.GAUGE, "bytes", "bytes those windows cover"),
            new Metric("ncclguard.device.communicators.live", "LiveDeviceCommunicators", Type.GAUGE, "communicators",
                    "device communicators (ncclDevCommCreate) of live communicators not destroyed"));

    private final MBeanServer server;
    private final ObjectName name;
    private final Iterable<Tag> tags;

    /** Reads the platform MBean server's ncclguard MBean. */
    public NcclGuardMetrics() {
        this(Tags.empty());
    }

    /** The same, each meter with {@code tags} (a job or rank label, say). */
    public NcclGuardMetrics(Iterable<Tag> tags) {
        this(ManagementFactory.getPlatformMBeanServer(), tags);
    }

    NcclGuardMetrics(MBeanServer server, Iterable<Tag> tags) {
        this.server = server;
        this.tags = tags;
        try {
            this.name = new ObjectName(OBJECT_NAME);
        } catch (MalformedObjectNameException e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    public void bindTo(MeterRegistry registry) {
        for (Metric m : METRICS) {
            String attribute = m.attribute();
            switch (m.type()) {
                case COUNTER -> FunctionCounter.builder(m.name(), this, metrics -> metrics.read(attribute))
                        .description(m.description()).baseUnit(m.unit()).tags(tags).register(registry);
                case GAUGE -> Gauge.builder(m.name(), this, metrics -> metrics.read(attribute))
                        .description(m.description()).baseUnit(m.unit()).tags(tags).register(registry);
                case SECONDS -> TimeGauge.builder(m.name(), this, TimeUnit.SECONDS, metrics -> metrics.read(attribute))
                        .description(m.description()).tags(tags).register(registry);
            }
        }
    }

    /** The attribute now; NaN while the MBean is not there (or the attribute is not a number). */
    double read(String attribute) {
        try {
            Object value = server.getAttribute(name, attribute);
            return value instanceof Number n ? n.doubleValue() : Double.NaN;
        } catch (JMException | RuntimeException e) {
            return Double.NaN;
        }
    }
}
