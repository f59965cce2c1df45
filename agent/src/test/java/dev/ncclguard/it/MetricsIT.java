package dev.ncclguard.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.ncclguard.it.apps.MetricsApp;
import dev.ncclguard.live.mxbean.TrackerMXBean;
import dev.ncclguard.testkit.ChildJvm;
import dev.ncclguard.testkit.Output;
import dev.ncclguard.testkit.Repository;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.Method;
import java.net.HttpURLConnection;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The MBean as Prometheus sees it through a real jmx_exporter (its javaagent from Maven Central)
 * with the rules file the repository ships, scraped over loopback from a child JVM whose numbers
 * are known (MetricsApp).
 */
class MetricsIT {
    private static final Path APP_LIBS = Path.of(System.getProperty("ncclguard.test.appLibs"));
    private static final Path SAMPLES_CLASSES = Path.of(System.getProperty("ncclguard.test.samplesClasses"));
    static final Path RULES = Repository.file("docs/metrics/jmx-exporter.yaml");

    /** One rule: the MBean attribute, the metric's name and type. */
    private static final Pattern RULE = Pattern.compile(
            "- pattern: 'dev\\.ncclguard<type=Tracker><>(\\w+): \\(\\.\\*\\)'\\s+name: (\\w+)\\s+type: (\\w+)");

    /** The shipped rules: attribute to {name, type}. */
    static Map<String, String[]> rules() throws IOException {
        Map<String, String[]> rules = new HashMap<>();
        Matcher m = RULE.matcher(Files.readString(RULES));
        while (m.find()) {
            rules.put(m.group(1), new String[] {m.group(2), m.group(3)});
        }
        return rules;
    }

    /** Every numeric attribute of the MBean, by its JMX name. */
    static TreeSet<String> numericAttributes() {
        TreeSet<String> names = new TreeSet<>();
        for (Method m : TrackerMXBean.class.getMethods()) {
            Class<?> t = m.getReturnType();
            if (m.getName().startsWith("get") && m.getParameterCount() == 0 && (t == int.class || t == long.class
                    || t == double.class)) {
                names.add(m.getName().substring(3));
            }
        }
        return names;
    }

    @Test
    void everyNumericAttributeOfTheMBeanHasARule() throws Exception {
        assertEquals(numericAttributes(), new TreeSet<>(rules().keySet()));
    }

    @Test
    void jmxExporterScrapesTypedCountersAndGaugesWithTheKnownNumbers() throws Exception {
        int port;
        try (ServerSocket free = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            port = free.getLocalPort();
        }
        String exporter = "-javaagent:" + lib("jmx_prometheus_javaagent-") + "=127.0.0.1:" + port + ":"
                + RULES.toAbsolutePath().normalize();
        ChildJvm.Running app = ChildJvm.sample().agent("text=none,pending-threshold=1s").jvmArg(exporter)
                .mainClass(AgentSafetyIT.testClasspath() + File.pathSeparator + SAMPLES_CLASSES, MetricsApp.class.getName())
                .timeout(90).start();
        try {
            app.awaitStdoutLine(MetricsApp.READY);
            Scrape first = scrapeUntil(port, "ncclguard_communicators_live", app);
            Thread.sleep(1_200); // past the pending threshold: the next scrape sees the event pending that long
            Scrape s = scrape(port);

            assertEquals("counter", s.types.get("ncclguard_communicator_creations_total"), s.text);
            assertEquals(2.0, s.values.get("ncclguard_communicator_creations_total"), s.text);
            assertEquals(1.0, s.values.get("ncclguard_communicator_releases_total"), s.text);
            assertEquals(1.0, s.values.get("ncclguard_event_creations_total"), s.text);
            assertEquals(1.0, s.values.get("ncclguard_stream_creations_total"), s.text);
            assertEquals(0.0, s.values.get("ncclguard_cleanup_releases_total"), s.text);
            assertEquals("gauge", s.types.get("ncclguard_communicators_live"), s.text);
            assertEquals(1.0, s.values.get("ncclguard_communicators_live"), s.text);
            assertEquals(1.0, s.values.get("ncclguard_events_live"), s.text);
            assertEquals(1.0, s.values.get("ncclguard_streams_live"), s.text);
            assertEquals(2.0, s.values.get("ncclguard_stream_ops_pending"), "the allreduce and the record: " + s.text);
            assertEquals(0.0, first.values.get("ncclguard_events_pending_too_long"), "first seen pending: " + first.text);
            assertEquals(1.0, s.values.get("ncclguard_events_pending_too_long"), s.text);
            assertEquals(1.0, s.values.get("ncclguard_pending_threshold_seconds"), s.text);
            assertTrue(s.values.get("ncclguard_communicator_oldest_age_seconds") >= 1.2, s.text);
            assertEquals(0.0, s.values.get("ncclguard_nccl_ops_in_flight"), "none in flight as NCCL's profiler plugin counts: " + s.text);
            for (String[] rule : rules().values()) {
                String name = rule[0];
                // the text format 0.0.4 that Prometheus asks for names a counter's family with its _total
                assertEquals(rule[1].toLowerCase(java.util.Locale.ROOT), s.types.get(name), name + " in " + s.text);
                assertTrue(s.values.containsKey(name), name + " in " + s.text);
            }
        } finally {
            app.process.getOutputStream().write("exit\n".getBytes(StandardCharsets.UTF_8));
            app.process.getOutputStream().close();
            Output r = app.finish();
            assertEquals(0, r.exitCode(), r.describe());
        }
    }

    private static String lib(String prefix) throws IOException {
        try (var files = Files.list(APP_LIBS)) {
            return files.filter(p -> p.getFileName().toString().startsWith(prefix)).findFirst()
                    .orElseThrow(() -> new AssertionError("no " + prefix + "*.jar in " + APP_LIBS)).toString();
        }
    }

    /** Samples by name, types by metric family, and the text as scraped. */
    private record Scrape(Map<String, Double> values, Map<String, String> types, String text) {
    }

    /** Scrapes until {@code metric} is there: the agent registers its MBean a moment after the first call. */
    private static Scrape scrapeUntil(int port, String metric, ChildJvm.Running app) throws Exception {
        long until = System.nanoTime() + 30_000_000_000L;
        while (true) {
            try {
                Scrape s = scrape(port);
                if (s.values.containsKey(metric)) {
                    return s;
                }
            } catch (IOException e) {
                // the exporter's server is not up yet
            }
            if (!app.process.isAlive() || System.nanoTime() - until > 0) {
                fail("no " + metric + " from the exporter on port " + port + ": " + app.finish().describe());
            }
            Thread.sleep(100);
        }
    }

    /** The Prometheus text format: "# TYPE family type" lines and "name{labels} value" samples. */
    private static Scrape scrape(int port) throws IOException {
        HttpURLConnection c = (HttpURLConnection) URI.create("http://127.0.0.1:" + port + "/metrics").toURL()
                .openConnection();
        c.setConnectTimeout(2_000);
        c.setReadTimeout(5_000);
        String text;
        try (InputStream in = c.getInputStream()) {
            text = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        Map<String, Double> values = new HashMap<>();
        Map<String, String> types = new HashMap<>();
        for (String line : List.of(text.split("\n"))) {
            if (line.startsWith("# TYPE ")) {
                String[] parts = line.split(" ");
                types.put(parts[2], parts[3]);
            } else if (!line.startsWith("#") && !line.isBlank()) {
                int space = line.lastIndexOf(' ');
                String name = line.substring(0, space);
                int brace = name.indexOf('{');
                values.put(brace < 0 ? name : name.substring(0, brace), Double.valueOf(line.substring(space + 1)));
            }
        }
        return new Scrape(values, types, text);
    }
}
