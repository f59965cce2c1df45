package dev.ncclguard.cli;

import dev.ncclguard.config.Options;
import java.io.PrintStream;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

/**
 * {@code help [COMMAND|options]}: a command's usage, as picocli's help command prints it, or the
 * agent's options, from the one table they are parsed by ({@link Options#table()}).
 */
@Command(name = "help", helpCommand = true,
        description = {"Print a command's usage, or with 'options' every agent option with its default."})
final class HelpCommand implements Callable<Integer> {
    static final String OPTIONS_TOPIC = "options";

    private final Cli.Io io;

    @Parameters(arity = "0..1", paramLabel = "COMMAND|options", description = "a command, or 'options'")
    String topic;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    HelpCommand(Cli.Io io) {
        this.io = io;
    }

    @Override
    public Integer call() {
        CommandLine top = spec.parent().commandLine();
        if (topic == null) {
            top.usage(io.out());
            return Cli.OK;
        }
        if (topic.equals(OPTIONS_TOPIC)) {
            io.out().print(optionsText());
            return Cli.OK;
        }
        CommandLine command = top.getSubcommands().get(topic);
        if (command == null) {
            io.err().println("ncclguard help: unknown command '" + topic + "' (commands: "
                    + String.join(", ", top.getSubcommands().keySet()) + ", or options); see --help");
            return Cli.USAGE;
        }
        command.usage(io.out());
        return Cli.OK;
    }

    /** The agent's options, two lines each: key, values and default; what it does. */
    static String optionsText() {
        StringBuilder out = new StringBuilder();
        out.append("Agent options: -javaagent:ncclguard-agent.jar=key=value,key=value (docs/usage.md, \"Options\").\n")
                .append("Each key also reads from the system property ncclguard.KEY, the environment variable\n")
                .append("NCCLGUARD_KEY (upper case, '-' becomes '_') and the config file (config=PATH), in this\n")
                .append("order: argument, system property, environment variable, config file, default.\n\n");
        for (String[] row : Options.table()) {
            String head = "  " + row[0];
            out.append(head).append(" ".repeat(Math.max(1, 22 - head.length()))).append(row[1])
                    .append(" (default: ").append(row[2]).append(")\n");
            out.append(" ".repeat(22)).append(row[3]).append('\n');
        }
        return out.toString();
    }

    /** Prints {@link #optionsText()}. */
    static void print(PrintStream out) {
        out.print(optionsText());
    }
}
