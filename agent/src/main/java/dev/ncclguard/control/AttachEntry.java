package dev.ncclguard.control;

import dev.ncclguard.log.OneLine;
import dev.ncclguard.config.Options;
import dev.ncclguard.config.OptionsException;
import dev.ncclguard.config.OutputTargets;
import dev.ncclguard.live.AgentState;
import dev.ncclguard.log.Log;
import dev.ncclguard.report.JsonReportWriter;
import dev.ncclguard.report.Report;
import dev.ncclguard.report.TextReportWriter;
import java.lang.instrument.Instrumentation;
import java.time.Duration;
import java.util.function.Consumer;

/**
 * agentmain's side of the attach and dump commands. A command's request comes as the agent
 * argument {@code ncclguard-cli;VERB;NONCE;OPTIONS}; its answer goes back as an agent property
 * (see {@link Replies}): a first line {@code OK} or {@code FAILED}, then the text to print.
 * Anything else is plain options from another tool (jcmd JVMTI.agent_load, a VirtualMachine.loadAgent
 * of its own).
 *
 * <p>Options are checked before anything in the JVM changes. A bad one fails the command with its
 * one line and leaves the JVM as it was: agentmain then returns normally, since an exception
 * thrown from agentmain makes the JVM print a stack trace and assertion messages on the
 * application's stderr. A bad option in plain options does throw: that is the only way to tell
 * another tool, and the line is in the JVM's message.
 */
public final class AttachEntry {
    public static final String REQUEST = "ncclguard-cli";
    public static final String ATTACH = "attach";
    public static final String DUMP_JSON = "dump-json";
    public static final String DUMP_TEXT = "dump-text";
    public static final String OK = "OK";
    public static final String FAILED = "FAILED";
    /** How long the attach may ask NCCL's RAS service about the communicators that already exist. */
    static final Duration RAS_TIMEOUT = Duration.ofSeconds(5);

    private AttachEntry() {
    }

    /**
     * @param install installs the agent with the given options string (premain's path, as an attach)
     */
    public static void agentmain(String args, Instrumentation inst, Consumer<String> install) {
        String[] request = args != null && args.startsWith(REQUEST + ";") ? args.split(";", 4) : null;
        if (request == null || request.length < 4) {
            plain(args, install);
            return;
        }
        String verb = request[1];
        String nonce = request[2];
        String options = request[3];
        String reply;
        try {
            reply = switch (verb) {
                case ATTACH -> attach(options, install);
                case DUMP_JSON, DUMP_TEXT -> dump(verb.equals(DUMP_JSON));
                default -> failed("ncclguard: unknown request '" + verb + "' (agent and command of different versions?)");
            };
        } catch (RuntimeException | LinkageError e) {
            reply = failed("ncclguard: " + verb + " failed in the target JVM: " + e);
        }
        try {
            Replies.put(inst, nonce, reply);
        } catch (ReflectiveOperationException | RuntimeException e) {
            Log.warn("cannot answer the " + verb + " command: " + e);
        }
    }

    private static void plain(String args, Consumer<String> install) {
        AgentState running = AgentState.current();
        if (running != null) {
            Options merged = running.merge(args);
            OutputTargets.check(merged);
            running.update(merged);
            Log.info("options now " + running.options());
            return;
        }
        OutputTargets.check(Options.parse(args)); // throws the one line before anything changes
        install.accept(args);
    }

    private static String attach(String optionsText, Consumer<String> install) {
        AgentState running = AgentState.current();
        if (running != null) {
            Options merged;
            try {
                merged = running.merge(optionsText);
                OutputTargets.check(merged);
            } catch (OptionsException e) {
                return failed(e.getMessage());
            }
            running.update(merged);
            return ok("ncclguard: already running in pid " + ProcessHandle.current().pid() + " (tracking since "
                    + since(running) + "): options changed, nothing installed twice\n  options: " + merged);
        }
        Options options;
        try {
            options = Options.parse(optionsText);
            OutputTargets.check(options);
        } catch (OptionsException e) {
            return failed(e.getMessage());
        }
        if (options.action() == Options.Action.OFF) {
            return ok("ncclguard: action=off: nothing installed in pid " + ProcessHandle.current().pid());
        }
        install.accept(optionsText);
        AgentState state = AgentState.current();
        if (state == null) {
            return failed("ncclguard: not installed in pid " + ProcessHandle.current().pid()
                    + "; the reason is on its stderr");
        }
        Report.BeforeAttach before = Ras.ask(System.getenv(), ProcessHandle.current().pid(), RAS_TIMEOUT);
        state.beforeAttach(before);
        StringBuilder out = new StringBuilder();
        out.append("ncclguard: attached to pid ").append(ProcessHandle.current().pid()).append(" (Java ")
                .append(Runtime.version()).append("), tracking since ").append(since(state)).append('\n');
        for (String line : state.coverage()) {
            out.append("  ").append(line).append('\n');
        }
        out.append("  handles created before the attach are unknown to the agent; ").append(before.note()).append('\n');
        out.append("  options: ").append(options);
        return ok(out.toString());
    }

    private static String dump(boolean json) {
        AgentState state = AgentState.current();
        if (state == null) {
            return failed("ncclguard: not running in pid " + ProcessHandle.current().pid()
                    + " (start it with -javaagent, or attach it first)");
        }
        Report report = state.liveReport();
        return ok(json ? JsonReportWriter.toJson(report) : TextReportWriter.toText(report));
    }

    private static String since(AgentState state) {
        return java.time.Instant.ofEpochMilli(state.tracker().startedAtMillis()).toString();
    }

    private static String ok(String text) {
        return OK + "\n" + text;
    }

    private static String failed(String line) {
        return FAILED + "\n" + OneLine.of(line); // the reply is lines: its one line stays one
    }
}
