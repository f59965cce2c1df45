package dev.ncclguard.live;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.ncclguard.live.mxbean.TrackerMXBean;
import dev.ncclguard.testkit.ReportJson;
import java.lang.management.ManagementFactory;
import java.time.Instant;
import javax.management.JMX;
import javax.management.MBeanServer;
import javax.management.MBeanServerFactory;
import javax.management.ObjectName;
import org.junit.jupiter.api.Test;

class TrackerBeanTest {
    private final Calls calls = new Calls();

    private TrackerMXBean registered(AgentState state) throws Exception {
        MBeanServer server = MBeanServerFactory.newMBeanServer();
        assertTrue(TrackerBean.register(server, state, calls.live));
        return JMX.newMXBeanProxy(server, new ObjectName(TrackerMXBean.OBJECT_NAME), TrackerMXBean.class);
    }

    @Test
    void countsWhatTheTrackerHoldsAndHasSeen() throws Exception {
        TrackerMXBean bean = registered(calls.state("stacks=on", null));
        calls.initRank(0x100, 2, 0);
        calls.initRank(0x200, 2, 1);
        calls.destroy(0x200);
        calls.eventCreate(0x300);
        calls.eventCreate(0x301);
        calls.eventDestroy(0x301);

        assertEquals(1, bean.getLiveCommunicators());
        assertEquals(2, bean.getCommunicatorsCreated());
        assertEquals(1, bean.getCommunicatorsReleased());
        assertEquals(1, bean.getLiveEvents());
        assertEquals(2, bean.getEventsCreated());
        assertEquals(1, bean.getEventsDestroyed());
        assertEquals(0, bean.getCleanupsDone());
        assertFalse(bean.isAttached());
        assertTrue(bean.getOptions().contains("stacks=on"), bean.getOptions());
    }

    @Test
    void reportJsonIsTheLiveReportOfWhatIsNotReleasedYet() throws Exception {
        Instant attachedAt = Instant.parse("2025-01-02T03:04:05.678Z");
        TrackerMXBean bean = registered(calls.state("", attachedAt));
        calls.initRank(0x100, 2, 0);
        calls.eventCreate(0x300);
        calls.record(0x300, 0x400);

        JsonNode report = ReportJson.tree(bean.reportJson());
        assertEquals("ncclguard-report/1", report.path("schema").asText());
        assertTrue(report.path("live").asBoolean(), report.toString());
        assertEquals(attachedAt.toString(), report.path("attachedAt").asText());
        assertEquals(1, report.path("summary").path("leakedComms").asInt(), report.toString());
        assertEquals(1, report.path("summary").path("pendingEvents").asInt(), report.toString());
        assertEquals("0x100", report.path("leaks").path(0).path("handle").asText());
        assertTrue(bean.isAttached());
        assertTrue(bean.reportText().contains("not released yet"), bean.reportText());
    }

    @Test
    void mbeanIsRegisteredAtTheFirstTrackedCallWhenStartedWithTheJvm() throws Exception {
        MBeanServer platform = ManagementFactory.getPlatformMBeanServer();
        ObjectName name = new ObjectName(TrackerMXBean.OBJECT_NAME);
        try {
            calls.live.started(calls.state("", null), true);
            Thread.sleep(200);
            assertFalse(platform.isRegistered(name), "registered before any tracked call");

            calls.eventCreate(0x300);
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (!platform.isRegistered(name) && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            assertTrue(platform.isRegistered(name), "not registered within 10 s of the first call");
            assertEquals(1L, platform.getAttribute(name, "EventsCreated"));
        } finally {
            if (platform.isRegistered(name)) {
                platform.unregisterMBean(name);
            }
        }
    }
}
