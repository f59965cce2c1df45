package dev.ncclguard.junit;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionConfigurationException;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.opentest4j.AssertionFailedError;

/**
 * Fails a test that leaves an NCCL communicator, a pending CUDA event or an unsynchronized stream
 * behind when it ends, with the ncclguard report of each in the failure message. A test owns what
 * became a leak between its start (before {@code @BeforeEach}) and its end (after
 * {@code @AfterEach}); a class owns what its {@code @BeforeAll} and {@code @AfterAll} leave.
 *
 * <p>Use {@code @ExtendWith(NcclGuardExtension.class)}, or let JUnit find it
 * ({@code junit.jupiter.extensions.autodetection.enabled=true}). The test JVM needs the agent:
 * {@code -javaagent:ncclguard-agent.jar} (Surefire's argLine). Without it the class fails with a
 * line that says so, unless the configuration parameter {@code ncclguard.junit.agent=optional}
 * (then it warns once and checks nothing).
 *
 * <p>The agent sees the whole JVM: tests that run in parallel and touch NCCL or CUDA may be
 * blamed for each other's leaks; run those in the same thread.
 */
public final class NcclGuardExtension implements BeforeAllCallback, AfterAllCallback, BeforeEachCallback,
        AfterEachCallback {
    /** "required" (default) or "optional". */
    public static final String AGENT_PARAMETER = "ncclguard.junit.agent";

    private static final ExtensionContext.Namespace NAMESPACE = ExtensionContext.Namespace.create(NcclGuardExtension.class);
    private static final String BASELINE = "baseline";
    private static final String BLAMED = "blamed";
    private static final AtomicBoolean WARNED = new AtomicBoolean();

    @Override
    public void beforeAll(ExtensionContext context) {
        LiveAgent agent = agent(context);
        if (agent != null) {
            store(context).put(BASELINE, new HashSet<>(agent.leakIds()));
            store(context).put(BLAMED, new HashSet<String>());
        }
    }

    @Override
    public void beforeEach(ExtensionContext context) {
        LiveAgent agent = agent(context);
        if (agent != null) {
            store(context).put(BASELINE, new HashSet<>(agent.leakIds()));
        }
    }

    @Override
    public void afterEach(ExtensionContext context) {
        LiveAgent agent = agent(context);
        Set<?> baseline = store(context).get(BASELINE, Set.class);
        if (agent == null || baseline == null) {
            return;
        }
        List<String> left = leftBehind(agent, baseline);
        if (left.isEmpty()) {
            return;
        }
        // the class's own check must not report the same handles again
        ExtensionContext parent = context.getParent().orElse(null);
        if (parent != null) {
            @SuppressWarnings("unchecked")
            Set<String> blamed = store(parent).get(BLAMED, Set.class);
            if (blamed != null) {
                blamed.addAll(left);
            }
        }
        fail(agent, left, context.getDisplayName());
    }

    @Override
    public void afterAll(ExtensionContext context) {
        LiveAgent agent = agent(context);
        Set<?> baseline = store(context).get(BASELINE, Set.class);
        Set<?> blamed = store(context).get(BLAMED, Set.class);
        if (agent == null || baseline == null) {
            return;
        }
        List<String> left = leftBehind(agent, baseline);
        if (blamed != null) {
            left.removeAll(blamed);
        }
        if (!left.isEmpty()) {
            fail(agent, left, context.getDisplayName() + " (its @BeforeAll, @AfterAll and fields)");
        }
    }

    private static List<String> leftBehind(LiveAgent agent, Set<?> baseline) {
        List<String> left = new ArrayList<>();
        for (String id : new LinkedHashSet<>(agent.leakIds())) {
            if (!baseline.contains(id)) {
                left.add(id);
            }
        }
        return left;
    }

    private static void fail(LiveAgent agent, List<String> ids, String who) {
        String report = agent.describe(ids);
        if (report.isEmpty()) {
            return; // released between the two looks
        }
        throw new AssertionFailedError("ncclguard: " + who + " left " + count(ids) + " behind:\n\n"
                + withoutJUnitFrames(report));
    }

    /** Each creating stack cut where JUnit's own frames begin: below the test they say nothing. */
    static String withoutJUnitFrames(String report) {
        StringBuilder out = new StringBuilder(report.length());
        boolean cutting = false;
        for (String line : report.split("\n", -1)) {
            boolean frame = line.startsWith("    at ") || line.startsWith("    ... ");
            if (frame && line.startsWith("    at org.junit.")) {
                if (!cutting) {
                    out.append("    ... (JUnit)\n");
                }
                cutting = true;
                continue;
            }
            if (frame && cutting) {
                continue;
            }
            cutting = false;
            out.append(line).append('\n');
        }
        return out.substring(0, Math.max(0, out.length() - 1));
    }

    private static String count(List<String> ids) {
        int comms = 0;
        int events = 0;
        int streams = 0;
        for (String id : ids) {
            if (id.startsWith("comm:")) {
                comms++;
            } else if (id.startsWith("event:")) {
                events++;
            } else {
                streams++;
            }
        }
        List<String> parts = new ArrayList<>();
        if (comms > 0) {
            parts.add(comms + (comms == 1 ? " communicator" : " communicators"));
        }
        if (events > 0) {
            parts.add(events + (events == 1 ? " pending event" : " pending events"));
        }
        if (streams > 0) {
            parts.add(streams + (streams == 1 ? " unsynchronized stream" : " unsynchronized streams"));
        }
        return String.join(", ", parts);
    }

    /** The agent, or null when it is optional and absent; absent and required fails the container. */
    private static LiveAgent agent(ExtensionContext context) {
        LiveAgent.Lookup lookup = LiveAgent.find();
        if (lookup.agent() != null) {
            return lookup.agent();
        }
        String mode = context.getConfigurationParameter(AGENT_PARAMETER).orElse("required");
        String how = lookup.problem() + ", so " + NcclGuardExtension.class.getSimpleName() + " cannot see NCCL and"
                + " CUDA handles. Start the test JVM with -javaagent:/path/to/ncclguard-agent.jar (Maven Surefire:"
                + " <argLine>-javaagent:${path}/ncclguard-agent.jar</argLine>; Gradle: test { jvmArgs"
                + " '-javaagent:...' }), or set the JUnit configuration parameter " + AGENT_PARAMETER
                + "=optional to run without it.";
        if (mode.equals("optional")) {
            if (WARNED.compareAndSet(false, true)) {
                System.err.println("ncclguard: WARNING: " + how + " Leaks are not checked.");
            }
            return null;
        }
        if (!mode.equals("required")) {
            throw new ExtensionConfigurationException("ncclguard: " + AGENT_PARAMETER + " is '" + mode
                    + "', expected required or optional");
        }
        throw new ExtensionConfigurationException("ncclguard: " + how);
    }

    private static ExtensionContext.Store store(ExtensionContext context) {
        return context.getStore(NAMESPACE);
    }
}
