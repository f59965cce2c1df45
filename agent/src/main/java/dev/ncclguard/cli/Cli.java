package dev.ncclguard.cli;

import dev.ncclguard.log.OneLine;
import java.io.InputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * The agent jar's command line: {@code java -jar ncclguard-agent.jar COMMAND [ARGS]}, parsed by
 * picocli (shaded into the jar, and loaded only from here: the agent never touches this package).
 * Every command has --help, the tool has --version, options go before or after the arguments, and
 * every command keeps to one table of exit statuses: {@link #OK}, {@link #FAILED} (the verdict:
 * leaks, a report missing or cut short, a rank without a report), {@link #USAGE} (usage, or an
 * input or output that cannot be used).
 */
public final class Cli {
    /** The command did what it was asked and the verdict, where it gives one, passed. */
    public static final int OK = 0;
    /** check or merge: something leaked, a report is missing or unreadable, a rank wrote none. */
    public static final int FAILED = 1;
    /** A bad command line, or an input or output that cannot be used (no such process, a FIFO...). */
    public static final int USAGE = 2;

    /** The streams a command talks to; standard input only for explain's {@code -}. */
    record Io(PrintStream out, PrintStream err, InputStream in, boolean errIsTerminal) {
    }

    @Command(name = "ncclguard", mixinStandardHelpOptions = true, versionProvider = Version.class,
            synopsisSubcommandLabel = "COMMAND",
            header = "Checks what a JVM left behind of NCCL and CUDA, from the agent's reports.",
            description = {"As an agent: java -javaagent:ncclguard-agent.jar[=key=value,...] ... (docs/usage.md).",
                "Exit status: 0 ok; 1 the verdict failed (check, merge); 2 usage, or an input or output that"
                        + " cannot be used."},
            footer = "Run 'java -jar ncclguard-agent.jar COMMAND --help' for a command's options.")
    static final class Top implements Callable<Integer> {
        private final Io io;
        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        Top(Io io) {
            this.io = io;
        }

        @Override
        public Integer call() {
            io.err().println("ncclguard: no command given");
            spec.commandLine().usage(io.err());
            return USAGE;
        }
    }

    @Command(name = "version", mixinStandardHelpOptions = true, description = "Print the agent's version.")
    static final class VersionCommand implements Callable<Integer> {
        private final Io io;

        VersionCommand(Io io) {
            this.io = io;
        }

        @Override
        public Integer call() {
            io.out().println(Version.line());
            return OK;
        }
    }

    /** --version of the tool and of every command. */
    static final class Version implements CommandLine.IVersionProvider {
        static String line() {
            return "ncclguard " + dev.ncclguard.report.Report.Version.AGENT;
        }

        @Override
        public String[] getVersion() {
            return new String[] {line()};
        }
    }

    private Cli() {
    }

    public static void main(String[] args) {
        PrintStream out = System.out;
        PrintStream err = System.err;
        int status = run(args, new Io(out, err, System.in, Terminal.isStderr()));
        out.flush();
        err.flush();
        System.exit(status);
    }

    /** Runs one command; never throws: a failure is one line on {@code err} and status 2. */
    public static int run(String[] args, PrintStream out, PrintStream err) {
        return run(args, new Io(out, err, InputStream.nullInputStream(), false));
    }

    static int run(String[] args, Io io) {
        CommandLine cli = commandLine(io);
        int status = cli.execute(args);
        io.out().flush();
        io.err().flush();
        return status;
    }

    static CommandLine commandLine(Io io) {
        CommandLine cli = new CommandLine(new Top(io));
        // the agent's options in --help, from the one table ('help options' prints it alone)
        cli.getCommandSpec().usageMessage().footer("Run 'java -jar ncclguard-agent.jar COMMAND --help' for a command's"
                + " options, 'help options' for the agent's options alone.", "", HelpCommand.optionsText().stripTrailing()
                        .replace("%", "%%"));
        cli.addSubcommand("check", new CheckCommand(io));
        cli.addSubcommand("merge", new MergeCommand(io));
        cli.addSubcommand("explain", new ExplainCommand(io));
        cli.addSubcommand("attach", new AttachCommand(io));
        cli.addSubcommand("dump", new DumpCommand(io));
        cli.addSubcommand("version", new VersionCommand(io));
        cli.addSubcommand("help", new HelpCommand(io));
        cli.setOut(new PrintWriter(io.out(), true, StandardCharsets.UTF_8));
        cli.setErr(new PrintWriter(io.err(), true, StandardCharsets.UTF_8));
        cli.setColorScheme(CommandLine.Help.defaultColorScheme(CommandLine.Help.Ansi.OFF));
        cli.setUsageHelpWidth(100);
        cli.setParameterExceptionHandler(Cli::usageError);
        cli.setExecutionExceptionHandler((e, line, parsed) -> failure(e, line, io));
        cli.setExitCodeExceptionMapper(e -> USAGE);
        return cli;
    }

    /** A bad command line: one line saying what is wrong and where help is, status 2. */
    private static int usageError(CommandLine.ParameterException e, String[] args) {
        CommandLine line = e.getCommandLine();
        PrintWriter err = line.getErr();
        String name = line.getCommandName();
        boolean top = line.getParent() == null;
        if (top && e instanceof CommandLine.UnmatchedArgumentException u && !u.getUnmatched().isEmpty()
                && !u.getUnmatched().get(0).startsWith("-")) {
            err.println("ncclguard: unknown command '" + OneLine.of(u.getUnmatched().get(0)) + "' (commands: "
                    + String.join(", ", commands(line)) + "); see --help");
        } else {
            err.println((top ? "ncclguard: " : "ncclguard " + name + ": ") + OneLine.of(e.getMessage())
                    + "; see 'java -jar ncclguard-agent.jar " + (top ? "" : name + " ") + "--help'");
        }
        err.flush();
        return USAGE;
    }

    private static java.util.List<String> commands(CommandLine top) {
        java.util.List<String> names = new java.util.ArrayList<>(top.getSubcommands().keySet());
        names.remove("help");
        return names;
    }

    /** A command that failed: its one line, status 2. */
    private static int failure(Exception e, CommandLine line, Io io) {
        String name = line.getCommandName();
        if (e instanceof CommandException.Line l) {
            io.err().println(OneLine.of(l.getMessage()));
        } else if (e instanceof CommandException c) {
            io.err().println("ncclguard " + name + ": " + OneLine.of(c.getMessage()));
        } else {
            String why = e.getMessage() != null ? e.getMessage() : e.getClass().getName();
            io.err().println("ncclguard " + name + ": failed: " + OneLine.of(why));
        }
        io.err().flush();
        return USAGE;
    }
}
