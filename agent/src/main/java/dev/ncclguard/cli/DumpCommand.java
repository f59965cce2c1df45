package dev.ncclguard.cli;

import dev.ncclguard.control.AttachEntry;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code dump <pid> [--json]}: prints the live report of a JVM that runs the agent, without
 * stopping it, by loading the agent jar with a dump request and reading the answer from the
 * target's agent properties: the attach channel, a UNIX-domain socket of the user that the JVM
 * opens on request. Never through JMX: starting the target's local JMX connector binds a TCP port
 * on every address for the rest of its life.
 */
@Command(name = "dump", mixinStandardHelpOptions = true, versionProvider = Cli.Version.class,
        description = {"Print the live report of a JVM that runs the agent: what would be leaks if it exited now.",
            "Exit status: 0 printed; 2 no agent in that JVM, no such process, or it did not answer."})
final class DumpCommand implements Callable<Integer> {
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
            String note = target.dynamicLoadingNote();
            if (note != null) {
                io.err().println(note);
            }
            String report = target.request(json ? AttachEntry.DUMP_JSON : AttachEntry.DUMP_TEXT, "");
            io.out().print(report.endsWith("\n") ? report : report + "\n");
            io.out().flush();
            return Cli.OK;
        }
    }
}
