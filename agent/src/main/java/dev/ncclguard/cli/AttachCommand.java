package dev.ncclguard.cli;

import dev.ncclguard.config.Options;
import dev.ncclguard.config.OptionsException;
import dev.ncclguard.control.AttachEntry;
import java.io.PrintStream;
import java.util.Map;

/**
 * {@code attach <pid> [key=value,...]}: loads the agent into a running JVM, or changes the options
 * of the agent already there. Options are checked here first, against the target's ncclguard.*
 * system properties, so that a bad one fails before the target is touched at all; the agent checks
 * them again there with its environment.
 */
final class AttachCommand implements Cli.Command {
    static final String USAGE = "attach <pid> [key=value,...]";

    @Override
    public int run(String[] args, PrintStream out, PrintStream err) throws Exception {
        if (args.length < 1 || args.length > 2) {
            err.println("usage: java -jar ncclguard-agent.jar " + USAGE);
            return 2;
        }
        String options = args.length == 2 ? args[1] : "";
        try (Target target = Target.attach(args[0])) {
            boolean running = target.agentRunning();
            try {
                // a running agent keeps the values of keys not given, so only the given ones are checked
                Options.parse(options, running ? Map.of() : target.optionProperties(), Map.of());
            } catch (OptionsException e) {
                err.println(e.getMessage());
                return 1;
            }
            String note = target.dynamicLoadingNote();
            if (note != null) {
                err.println(note);
            }
            try {
                out.println(target.request(AttachEntry.ATTACH, options));
            } catch (CommandException.Line e) {
                err.println(e.getMessage());
                return 1;
            }
            return 0;
        }
    }
}
