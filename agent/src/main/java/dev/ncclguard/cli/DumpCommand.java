package dev.ncclguard.cli;

import com.sun.tools.attach.VirtualMachine;
import dev.ncclguard.control.AttachEntry;
import dev.ncclguard.live.TrackerMXBean;
import java.io.IOException;
import java.io.PrintStream;
import java.time.Duration;
import javax.management.MBeanServerConnection;
import javax.management.ObjectName;
import javax.management.remote.JMXConnector;
import javax.management.remote.JMXConnectorFactory;
import javax.management.remote.JMXServiceURL;

/**
 * {@code dump <pid> [--json]}: prints the live report of a JVM that runs the agent, without
 * stopping it. Through the JVM's local JMX connector and the agent's MBean when it can (no agent
 * is loaded, so JDK 21+ prints no warning); else by loading the agent jar with a dump request
 * (a runtime without jdk.management.agent, or an agent that has not registered its MBean, which
 * it does at its first tracked call when started with -javaagent).
 */
final class DumpCommand implements Cli.Command {
    static final String USAGE = "dump <pid> [--json]";
    /** The MBean is registered on a thread of its own shortly after the agent's first tracked call. */
    private static final Duration MBEAN_WAIT = Duration.ofSeconds(2);

    @Override
    public int run(String[] args, PrintStream out, PrintStream err) throws Exception {
        boolean json = false;
        String pid = null;
        for (String arg : args) {
            if (arg.equals("--json")) {
                json = true;
            } else if (pid == null && !arg.startsWith("-")) {
                pid = arg;
            } else {
                err.println("usage: java -jar ncclguard-agent.jar " + USAGE);
                return 2;
            }
        }
        if (pid == null) {
            err.println("usage: java -jar ncclguard-agent.jar " + USAGE);
            return 2;
        }
        try (Target target = Target.attach(pid)) {
            if (!target.agentRunning()) {
                err.println("ncclguard: not running in pid " + pid + " (start it with -javaagent, or attach it first)");
                return 1;
            }
            String report = throughJmx(target.vm, json ? "reportJson" : "reportText");
            if (report == null) {
                String note = target.dynamicLoadingNote();
                if (note != null) {
                    err.println(note);
                }
                try {
                    report = target.request(json ? AttachEntry.DUMP_JSON : AttachEntry.DUMP_TEXT, "");
                } catch (CommandException.Line e) {
                    err.println(e.getMessage());
                    return 1;
                }
            }
            out.print(report.endsWith("\n") ? report : report + "\n");
            out.flush();
            return 0;
        }
    }

    /** The operation's answer, or null when the JVM has no JMX agent to start or no ncclguard MBean (yet). */
    static String throughJmx(VirtualMachine vm, String operation) throws Exception {
        String address;
        try {
            address = vm.startLocalManagementAgent();
        } catch (IOException | RuntimeException e) {
            return null; // e.g. a jlinked runtime without jdk.management.agent
        }
        try (JMXConnector connector = JMXConnectorFactory.connect(new JMXServiceURL(address))) {
            MBeanServerConnection server = connector.getMBeanServerConnection();
            ObjectName name = new ObjectName(TrackerMXBean.OBJECT_NAME);
            long deadline = System.nanoTime() + MBEAN_WAIT.toNanos();
            while (!server.isRegistered(name)) {
                if (System.nanoTime() > deadline) {
                    return null;
                }
                Thread.sleep(50);
            }
            return (String) server.invoke(name, operation, new Object[0], new String[0]);
        }
    }
}
