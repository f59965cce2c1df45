package dev.ncclguard.cli;

import dev.ncclguard.log.OneLine;
import dev.ncclguard.config.Options;
import dev.ncclguard.config.OptionsException;
import dev.ncclguard.control.AttachEntry;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

/**
 * {@code attach <pid> [key=value,...]}: loads the agent into a running JVM, or changes the options
 * of the agent already there. Options are checked here first, against the target's ncclguard.*
 * system properties, so that a bad one fails before the target is touched at all; the agent checks
 * them again there with its environment.
 */
@Command(name = "attach", mixinStandardHelpOptions = true, versionProvider = Cli.Version.class,
        description = {"Load the agent into a running JVM of this user, or change the options of the agent"
                + " already there.", "Exit status: 0 attached; 2 a bad option, a refused attach, no such process."})
final class AttachCommand implements Callable<Integer> {
    private final Cli.Io io;

    @Parameters(index = "0", paramLabel = "<pid>", description = "the process id of the JVM")
    String pid;

    @Parameters(index = "1", arity = "0..1", paramLabel = "key=value,...",
            description = "agent options (docs/usage.md, Options)")
    String options = "";

    AttachCommand(Cli.Io io) {
        this.io = io;
    }

    @Override
    public Integer call() throws Exception {
        try (Target target = Target.attach(pid)) {
            boolean running = target.agentRunning();
            try {
                // a running agent keeps the values of keys not given, so only the given ones are checked
                Options.parse(options, running ? Map.of() : target.optionProperties(), Map.of());
            } catch (OptionsException e) {
                io.err().println(OneLine.of(e.getMessage()));
                return Cli.USAGE;
            }
            String note = target.dynamicLoadingNote();
            if (note != null) {
                io.err().println(note);
            }
            io.out().println(target.request(AttachEntry.ATTACH, options));
            return Cli.OK;
        }
    }
}
