package dev.ncclguard.agent;


import dev.ncclguard.bootstrap.Hooks;
import dev.ncclguard.bootstrap.Live;
import dev.ncclguard.bridge.Bindings;
import dev.ncclguard.bridge.FfmHooks;
import dev.ncclguard.bridge.JnaBridge;
import dev.ncclguard.bridge.NativeMethods;
import dev.ncclguard.log.Log;
import dev.ncclguard.report.LiveReport;
import dev.ncclguard.track.Tracker;
import java.lang.instrument.Instrumentation;
import java.nio.file.Path;

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
        Bindings bindings;
        try {
            options = Options.parse(args);
            bindings = options.bindings() == null ? Bindings.none() : Bindings.load(Path.of(options.bindings()));
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
            NativeMethods.install(inst, tracker, bindings, premain);
            FfmHooks.install(inst, tracker);
            lifecycle.registerExitHook(inst);
        } catch (Throwable t) {
            Hooks.jna = null;
            Hooks.natives = null;
            Hooks.ffm = null;
            Log.error("not installed, the application runs without it", t);
        }
    }

    private static void instrument(Instrumentation inst) {
        new HookTransformer().install(inst);
    }
}
