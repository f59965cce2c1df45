package dev.ncclguard.micrometer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.TimeGauge;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.management.Attribute;
import javax.management.AttributeList;
import javax.management.AttributeNotFoundException;
import javax.management.DynamicMBean;
import javax.management.MBeanInfo;
import javax.management.MBeanServer;
import javax.management.MBeanServerFactory;
import javax.management.ObjectName;
import org.junit.jupiter.api.Test;

/** The binder over a stand-in for the agent's MBean, in an MBean server of the test's own. */
class NcclGuardMetricsTest {
    private final MBeanServer server = MBeanServerFactory.newMBeanServer();
    private final Map<String, Object> attributes = new HashMap<>();
    private final SimpleMeterRegistry registry = new SimpleMeterRegistry();

    /** The agent's MBean as JMX shows it: attributes by name. */
    private final class StandIn implements DynamicMBean {
        @Override
        public Object getAttribute(String attribute) throws AttributeNotFoundException {
            if (!attributes.containsKey(attribute)) {
                throw new AttributeNotFoundException(attribute);
            }
            return attributes.get(attribute);
        }

        @Override
        public void setAttribute(Attribute attribute) {
            throw new UnsupportedOperationException();
        }

        @Override
        public AttributeList getAttributes(String[] names) {
            return new AttributeList();
        }

        @Override
        public AttributeList setAttributes(AttributeList list) {
            throw new UnsupportedOperationException();
        }

        @Override
        public Object invoke(String action, Object[] params, String[] signature) {
            throw new UnsupportedOperationException();
        }

        @Override
        public MBeanInfo getMBeanInfo() {
            return new MBeanInfo(StandIn.class.getName(), "stand-in", null, null, null, null);
        }
    }

    private void registerStandIn() throws Exception {
        server.registerMBean(new StandIn(), new ObjectName(NcclGuardMetrics.OBJECT_NAME));
    }

    @Test
    void eachMeterReadsItsAttributeOfTheAgentsMBeanWhenItIsRead() throws Exception {
        attributes.put("CommunicatorsCreated", 5L);
        attributes.put("LiveCommunicators", 2);
        attributes.put("OldestLiveCommunicatorAgeSeconds", 90.5);
        attributes.put("NcclOpsInFlight", Double.NaN);
        registerStandIn();
        new NcclGuardMetrics(server, Tags.of("job", "train")).bindTo(registry);

        assertEquals(5.0, registry.get("ncclguard.communicator.creations").tag("job", "train").functionCounter().count());
        assertEquals(2.0, registry.get("ncclguard.communicators.live").gauge().value());
        assertEquals(90.5, registry.get("ncclguard.communicator.oldest.age").timeGauge().value(TimeUnit.SECONDS));
        assertTrue(Double.isNaN(registry.get("ncclguard.nccl.ops.in.flight").gauge().value()));
        attributes.put("LiveCommunicators", 3);
        assertEquals(3.0, registry.get("ncclguard.communicators.live").gauge().value(), "read when read, not at bind");
    }

    @Test
    void withoutTheAgentsMBeanEveryMeterReadsNaN() {
        new NcclGuardMetrics(server, Tags.empty()).bindTo(registry);

        assertEquals(NcclGuardMetrics.METRICS.size(), registry.getMeters().size());
        for (Meter meter : registry.getMeters()) {
            double value = meter.measure().iterator().next().getValue();
            assertTrue(Double.isNaN(value), meter.getId() + " = " + value);
        }
    }

    @Test
    void countersAreFunctionCountersAndTheRestGauges() {
        new NcclGuardMetrics(server, Tags.empty()).bindTo(registry);

        for (NcclGuardMetrics.Metric m : NcclGuardMetrics.METRICS) {
            Meter meter = registry.get(m.name()).meter();
            switch (m.type()) {
                case COUNTER -> assertInstanceOf(FunctionCounter.class, meter, m.name());
                case GAUGE -> assertInstanceOf(Gauge.class, meter, m.name());
                case SECONDS -> assertInstanceOf(TimeGauge.class, meter, m.name());
            }
        }
    }

    /**
     * Micrometer's Prometheus names (dots as underscores, _total on counters, _seconds on time
     * gauges) are the names of the repository's jmx_exporter rules, attribute for attribute.
     */
    @Test
    void theMetersAreTheJmxExporterRulesUnderPrometheusNames() throws Exception {
        Map<String, String> rules = new HashMap<>();
        Matcher m = Pattern.compile("- pattern: 'dev\\.ncclguard<type=Tracker><>(\\w+): \\(\\.\\*\\)'\\s+name: (\\w+)")
                .matcher(Files.readString(Path.of("..", "docs", "metrics", "jmx-exporter.yaml")));
        while (m.find()) {
            rules.put(m.group(1), m.group(2));
        }
        Map<String, String> meters = new HashMap<>();
        for (NcclGuardMetrics.Metric metric : NcclGuardMetrics.METRICS) {
            String suffix = switch (metric.type()) {
                case COUNTER -> "_total";
                case SECONDS -> "_seconds";
                case GAUGE -> "";
            };
            meters.put(metric.attribute(), metric.name().replace('.', '_') + suffix);
        }
        assertEquals(rules, meters);
    }
}
