package dev.ncclguard.cli;

import com.sun.tools.attach.VirtualMachine;
import dev.ncclguard.control.AttachEntry;
import dev.ncclguard.live.TrackerMXBean;
import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.Callable;
import javax.management.MBeanServerConnection;
import javax.management.ObjectName;
import javax.management.remote.JMXConnector;
import javax.management.remote.JMXConnectorFactory;
import javax.management.remote.JMXServiceURL;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code dump <pid> [--json]}: prints the live report of a JVM that runs the agent, without
 * stopping it. Through the JVM's local JMX connector and the agent's MBean when it can (no agent
 * is loaded, so JDK 21+ prints no warning); else by loading the agent jar with a dump request
 * (a runtime without jdk.management.agent, or an agent that has not registered its MBean, which
 * it does at its first tracked call when started with -javaagent).
 */
@Command(name = "dump", mixinStandardHelpOptions = true, versionProvider = Cli.Version.class,
        description = {"Print the live report of a JVM that runs the agent: what would be leaks if it exited now.",
            "Exit status: 0 printed; 2 no agent in that JVM, no such process, or it did not answer."})
final class DumpCommand implements Callable<Integer> {
    /** The MBean is registered on a thread of its own shortly after the agent's first tracked call. */
    private static final Duration MBEAN_WAIT = Duration.ofSeconds(2);

    private final Cli.Io io;

    @Parameters(index = "0", paramLabel = "<pid>", description = "the process id of the JVM")
    String pid;

    @Option(names = "--json", description = "the report as JSON (schema ncclguard-report/1, with \"live\": true)")
    boolean json;

    DumpCommand(Cli.Io io) {
        this.io = io;
    }

    @Override
    public Integer call() throws Exception {
        try (Target target = Target.attach(pid)) {
            if (!target.agentRunning()) {
                throw new CommandException("not running in pid " + pid
                        + " (start it with -javaagent, or attach it first)");
            }
            String report = throughJmx(target.vm, json ? "reportJson" : "reportText");
            if (report == null) {
                String note = target.dynamicLoadingNote();
                if (note != null) {
                    io.err().println(note);
                }
                report = target.request(json ? AttachEntry.DUMP_JSON : AttachEntry.DUMP_TEXT, "");
            }
            io.out().print(report.endsWith("\n") ? report : report + "\n");
            io.out().flush();
            return Cli.OK;
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
