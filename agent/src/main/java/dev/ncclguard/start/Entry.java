package dev.ncclguard.start;

import dev.ncclguard.agent.Agent;
import dev.ncclguard.cli.Cli;
import java.io.PrintStream;
import java.lang.instrument.Instrumentation;

/**
 * The one door into the agent's module, exported to the jar's entry class (entry.AgentLoader)
 * alone, whose unnamed module is also the application's: so it offers only what the caller could
 * do without it. Starting the agent takes the caller's own Instrumentation; the command line is the
 * jar's Main-Class anyway.
 */
public final class Entry {
    private Entry() {
    }

    public static void premain(String args, Instrumentation inst) {
        Agent.premain(args, inst);
    }

    public static void agentmain(String args, Instrumentation inst) {
        Agent.agentmain(args, inst);
    }

    public static void main(String[] args) {
        Cli.main(args);
    }

    public static int run(String[] args, PrintStream out, PrintStream err) {
        return Cli.run(args, out, err);
    }
}
