package dev.ncclguard.agent;


import dev.ncclguard.bootstrap.Hooks;
import dev.ncclguard.bootstrap.Live;
import dev.ncclguard.bridge.JnaBridge;
import dev.ncclguard.log.Log;
import dev.ncclguard.report.LiveReport;
import dev.ncclguard.track.Tracker;
import java.lang.instrument.Instrumentation;

/**
 * Installs the agent: options, tracker, bridges, exit hook. Does as little as possible here: it
 * runs before the application's main, and every millisecond is the application's start-up time.
 */
public final class Installer {
    private static final String INSTALLED = "ncclguard.installed";

    private Installer() {
    }

    public static void install(String args, Instrumentation inst, boolean premain) {
        Options options;
        try {
            options = Options.parse(args);
        } catch (IllegalArgumentException e) {
            if (premain) {
                // like a bad -XX flag: one line, and the JVM does not start
                System.err.println(e.getMessage());
                System.exit(1);
            }
            throw e;
        }
        if (System.getProperty(INSTALLED) != null) {
            Log.warn("already installed in this JVM; the second agent is ignored");
            return;
        }
        System.setProperty(INSTALLED, "true");
        if (options.action() == Options.Action.OFF) {
            return;
        }
        try {
            Log.configure(options.logging() == Options.Logging.APPLICATION);
            Tracker tracker = new Tracker(new Tracker.Config(options.stacks(), System::currentTimeMillis));
            Lifecycle lifecycle = new Lifecycle(options, tracker);
            if (premain) {
                Hooks.mainThread = Thread.currentThread();
            }
            Hooks.jna = new JnaBridge(tracker);
            Live.view = new LiveReport(tracker, options.suppressions());
            instrument(inst);
            lifecycle.registerExitHook(inst);
        } catch (Throwable t) {
            Hooks.jna = null;
            Log.error("not installed, the application runs without it", t);
        }
    }

    private static void instrument(Instrumentation inst) {
        new HookTransformer().install(inst);
    }
}
