package dev.ncclguard.agent;

import dev.ncclguard.bootstrap.state.HookState;
import dev.ncclguard.bridge.attach.LoadedNatives;
import dev.ncclguard.bridge.ffm.FfmFirstUse;
import dev.ncclguard.bridge.ffm.FfmTransformer;
import dev.ncclguard.bridge.interposer.NativePart;
import dev.ncclguard.bridge.jna.JnaBridge;
import dev.ncclguard.bridge.natives.NativeBridge;
import dev.ncclguard.bridge.natives.NativeMethods;
import dev.ncclguard.bridge.profiler.ProfilerBridge;
import dev.ncclguard.config.Bindings;
import dev.ncclguard.config.Options;
import dev.ncclguard.config.OutputTargets;
import dev.ncclguard.config.StrayNames;
import dev.ncclguard.live.AgentState;
import dev.ncclguard.live.LiveMonitor;
import dev.ncclguard.log.Log;
import dev.ncclguard.log.OneLine;
import dev.ncclguard.report.LiveReport;
import dev.ncclguard.track.Tracker;
import dev.ncclguard.weave.HookTransformer;
import dev.ncclguard.weave.HookWeaver;
import java.lang.instrument.Instrumentation;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.LongSupplier;

/**
 * Installs the agent: options, tracker, bridges, exit hook. Does as little as possible here: it
 * runs before the application's main, and every millisecond is the application's start-up time.
 */
public final class Installer {
    /** Set once installed, to "premain" or "attach": how the attach and dump commands tell a JVM runs the agent. */
    public static final String INSTALLED = "ncclguard.installed";

    private Installer() {
    }

    public static void install(String args, Instrumentation inst, boolean premain) {
        Options options;
        Bindings bindings;
        try {
            options = Options.parse(args);
            OutputTargets.check(options);
            bindings = options.bindings() == null ? Bindings.none() : Bindings.load(Path.of(options.bindings()));
        } catch (IllegalArgumentException e) {
            if (premain) {
                // like a bad -XX flag: one line, and the JVM does not start
                System.err.println(OneLine.of(e.getMessage()));
                System.exit(1);
            }
            throw e;
        }
        for (String stray : StrayNames.warnings(Options.systemProperties(), System.getenv())) {
            Log.warn(stray);
        }
        AgentState running = AgentState.current();
        if (running != null) {
            // a second attach (or a second -javaagent): the options change, nothing is installed twice
            running.update(running.merge(args));
            Log.info("already installed in this JVM; options now " + running.options());
            return;
        }
        if (options.action() == Options.Action.OFF) {
            return;
        }
        try {
            Log.configure(options.logging() == Options.Logging.APPLICATION);
            Log.debug(options.debug());
            if (options.debug()) {
                Log.debug("loaded ncclguard " + dev.ncclguard.report.Report.Version.AGENT + " (" + (premain ? "premain" : "attach")
                        + ") on Java " + Runtime.version() + " from " + agentJar());
                Log.debug("options: " + options + sources(options));
            }
            Tracker tracker = new Tracker(new Tracker.Config(options.stacks(), new WallClock()));
            tracker.stackDepot(options.stackDepot());
            LiveMonitor live = LiveMonitor.listenTo(tracker);
            if (options.debug()) {
                tracker.listener(new DebugListener(live));
            }
            HookState.mainThread = premain ? Thread.currentThread() : launcherMainThread();
            HookState.jna = new JnaBridge(tracker);
            HookState.live = new LiveReport(tracker, options.suppressions());
            boolean ffm = Runtime.version().feature() >= 22;
            Map<String, List<String>> instrumented = new HookTransformer(ffm, Preload.thread("ncclguard-preload", Preload.FIRST_JNA_CALLS))
                    .install(inst);
            // no application shutdown hook can exist before the class that holds them is loaded
            JfrShutdown.hooksMayExist = !notLoaded(instrumented, HookWeaver.APP_SHUTDOWN_HOOKS);
            NativeBridge natives = NativeMethods.install(inst, tracker, bindings, premain);
            if (natives != null && !premain) {
                // after an attach, native methods of classes loaded before it are reached at their call sites
                natives.coverage(LoadedNatives.reach(inst, natives));
            }
            if (ffm) {
                if (premain && notLoaded(instrumented, HookWeaver.SYMBOL_LOOKUP)
                        && notLoaded(instrumented, HookWeaver.LINKER)) {
                    FfmFirstUse.arm(inst, tracker); // installed at the first FFM use, if any
                } else {
                    FfmTransformer.install(inst, tracker);
                }
            }
            NativePart nativePart = installNativePart(options, tracker, premain, inst);
            RedefinitionWatch.install(inst, tracker); // after the agent's own retransformations
            String ffmCoverage = ffm
                    ? "FFM downcalls (java.lang.foreign): handles made from now on; any made before are not tracked"
                    : "FFM downcalls (java.lang.foreign): not on Java " + Runtime.version().feature() + " (22 and later)";
            AgentState state = new AgentState(tracker, options,
                    premain ? null : Instant.ofEpochMilli(tracker.startedAtMillis()), instrumented,
                    List.of(natives != null ? natives.coverage()
                            : "JNA direct mapping, JNI and JavaCPP native methods: NOT tracked (the reason is on stderr)",
                            ffmCoverage, nativeCoverage(options, nativePart, premain)));
            if (options.debug()) {
                for (String line : state.coverage()) {
                    Log.debug(line);
                }
            }
            new Lifecycle(state, nativePart).registerExitHook(inst);
            AgentState.publish(state);
            System.setProperty(INSTALLED, premain ? "premain" : "attach");
            live.started(state, premain);
        } catch (Throwable t) {
            HookState.jna = null;
            HookState.natives = null;
            HookState.ffm = null;
            HookState.ffmInstall = null;
            Log.error("not installed, the application runs without it", t);
        }
    }

    /**
     * The native part (libncclguard.so), before the application's code runs: the interposer
     * (native=on) and NCCL's profiler plugin (nccl-profiler=on); null when both are off or it
     * cannot be loaded (one line said why).
     */
    private static NativePart installNativePart(Options options, Tracker tracker, boolean premain,
            Instrumentation inst) {
        if (!options.nativeInterposer() && !options.ncclProfiler()) {
            return null;
        }
        NativePart part = NativePart.load(options.nativeDir(), nativeLoader(inst));
        if (part == null) {
            return null;
        }
        if (options.nativeInterposer()) {
            part.stackDepot(options.stackDepot());
            part.interpose(tracker, options.suppressions().libraries(), options.nativePatch());
        }
        if (options.ncclProfiler()) {
            profiler = ProfilerBridge.install(part, tracker, options.stacks());
        }
        return part;
    }

    private static volatile ProfilerBridge profiler;

    /**
     * JDK 24 and later: the library is loaded through the JDK's own loading (no restricted-method
     * warning for the application to see); before, and if that is not reachable, System.load.
     */
    private static NativePart.Loader nativeLoader(Instrumentation inst) {
        if (Runtime.version().feature() < 24) {
            return null;
        }
        try {
            Module base = Object.class.getModule();
            Module agent = Installer.class.getModule();
            if (!base.isExported("jdk.internal.loader", agent)) {
                inst.redefineModule(base, Set.of(), Map.of("jdk.internal.loader", Set.of(agent)), Map.of(), Set.of(),
                        Map.of());
            }
        } catch (RuntimeException e) {
            return null;
        }
        return new JdkLoader();
    }

    /** A class, not a lambda: premain. */
    private static final class JdkLoader implements NativePart.Loader {
        @Override
        public void load(Class<?> from, String path) {
            try {
                JdkInternals.loadLibrary(from, path);
            } catch (java.lang.reflect.InvocationTargetException e) {
                if (e.getCause() instanceof UnsatisfiedLinkError u) {
                    throw u;
                }
                System.load(path);
            } catch (ReflectiveOperationException | RuntimeException e) {
                System.load(path);
            }
        }
    }

    private static String nativeCoverage(Options options, NativePart part, boolean premain) {
        String interposer = part != null ? part.coverage(!premain)
                : "calls made in native code (libncclguard.so): NOT seen ("
                        + (options.nativeInterposer() || options.ncclProfiler() ? "the reason is on stderr" : "native=off")
                        + ")";
        String plugin = profiler != null ? "NCCL's profiler plugin: loaded by NCCL at its next communicator's init"
                + (premain ? "" : " (communicators made before the attach are not known to it)")
                : "NCCL's profiler plugin: off";
        return interposer + "; " + plugin;
    }

    /** "; from: report=config file /b/agent.properties, ..." for each key not at its default (log-level=debug). */
    private static String sources(Options options) {
        StringBuilder out = new StringBuilder();
        for (String key : Options.keys()) {
            String source = options.source(key);
            if (source != null && !source.equals("default")) {
                out.append(out.length() == 0 ? "; from: " : ", ").append(key).append('=').append(source);
            }
        }
        return out.toString();
    }

    private static String agentJar() {
        try {
            java.security.CodeSource code = Installer.class.getProtectionDomain().getCodeSource();
            return code == null ? "(unknown)" : String.valueOf(code.getLocation());
        } catch (RuntimeException e) {
            return "(unknown)";
        }
    }

    /** The launcher's main thread of a running JVM, if it still runs: exit-code must know when it dies. */
    private static Thread launcherMainThread() {
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            ThreadGroup group = t.getThreadGroup();
            if ("main".equals(t.getName()) && group != null && "main".equals(group.getName())) {
                return t;
            }
        }
        return null;
    }

    private static boolean notLoaded(Map<String, List<String>> instrumented, String internalName) {
        return instrumented.getOrDefault(internalName.replace('/', '.'), List.of()).contains(HookTransformer.NOT_LOADED);
    }

    /** The tracker's clock; a class of its own rather than a method reference, which costs more in premain. */
    private static final class WallClock implements LongSupplier {
        @Override
        public long getAsLong() {
            return System.currentTimeMillis();
        }
    }
}
