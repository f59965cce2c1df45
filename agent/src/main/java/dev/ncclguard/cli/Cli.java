package dev.ncclguard.cli;

import java.io.PrintStream;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The agent jar's command line: {@code java -jar ncclguard-agent.jar COMMAND [ARGS]}. Each command
 * is one entry of {@link #COMMANDS}; adding a command is one line there.
 */
public final class Cli {
    /** What a command does with its arguments; returns the process exit status. */
    public interface Command {
        int run(String[] args, PrintStream out, PrintStream err) throws Exception;
    }

    private record Entry(String usage, Command command) {
    }

    private static final Map<String, Entry> COMMANDS = new LinkedHashMap<>();

    static {
        COMMANDS.put("version", new Entry("version                 print the agent's version",
                (args, out, err) -> {
                    out.println("ncclguard " + dev.ncclguard.report.Report.Version.AGENT);
                    return 0;
                }));
        COMMANDS.put("check", new Entry(CheckCommand.USAGE, CheckCommand::run));
        COMMANDS.put("merge", new Entry(MergeCommand.USAGE, MergeCommand::run));
        COMMANDS.put("explain", new Entry(ExplainCommand.USAGE, ExplainCommand::run));
    }

    private Cli() {
    }

    public static void main(String[] args) {
        System.exit(run(args, System.out, System.err));
    }

    /** Runs one command; never throws: a failure is one line on {@code err} and status 2. */
    public static int run(String[] args, PrintStream out, PrintStream err) {
        if (args.length == 0 || args[0].equals("help") || args[0].equals("--help") || args[0].equals("-h")) {
            usage(args.length == 0 ? err : out);
            return args.length == 0 ? 2 : 0;
        }
        Entry entry = COMMANDS.get(args[0]);
        if (entry == null) {
            err.println("ncclguard: unknown command '" + args[0] + "' (commands: "
                    + String.join(", ", COMMANDS.keySet()) + ")");
            return 2;
        }
        try {
            return entry.command().run(Arrays.copyOfRange(args, 1, args.length), out, err);
        } catch (Exception e) {
            err.println("ncclguard: " + args[0] + " failed: " + e.getMessage());
            return 2;
        }
    }

    private static void usage(PrintStream out) {
        out.println("usage: java -jar ncclguard-agent.jar COMMAND [ARGS]");
        out.println("  as an agent: java -javaagent:ncclguard-agent.jar[=key=value,...] ... (docs/usage.md)");
        out.println("commands:");
        for (Entry e : COMMANDS.values()) {
            out.println("  " + e.usage());
        }
    }
}
