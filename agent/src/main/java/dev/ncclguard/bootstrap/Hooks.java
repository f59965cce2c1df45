package dev.ncclguard.bootstrap;

/**
 * The entry points that advice inlined into other classes calls. This class (and {@link JnaSink})
 * sits on the bootstrap class path so that it is visible from JNA in any class loader and from
 * java.lang; the agent proper plugs its implementation in once installed.
 */
public final class Hooks {
    /** The JNA bridge; null until the agent is installed, and while it is off. */
    public static volatile JnaSink jna;

    /** The status the JVM was asked to exit with (System.exit, signals); -1 while none. */
    public static volatile int exitStatus = -1;

    /** Whether the launcher's main thread died of an uncaught exception (the JVM then exits 1). */
    public static volatile boolean mainThreadFailed;

    /** The launcher's main thread, captured in premain. */
    public static volatile Thread mainThread;

    /** Set once the agent's exit hook runs after the application's hooks: JFR's hook then waits for it. */
    public static volatile boolean deferJfrShutdown;

    /** JFR's shutdown hook, kept back from the application's hooks so that it runs after the exit report. */
    public static volatile Thread jfrShutdownHook;

    /** The name JFR gives its shutdown hook thread (jdk.jfr.internal.PlatformRecorder). */
    public static final String JFR_SHUTDOWN_HOOK = "JFR Shutdown Hook";

    private Hooks() {
    }

    /** Called on every JNA call: the catalog entry of a tracked symbol, else null. Allocates nothing. */
    public static Object jnaLookup(String symbol) {
        JnaSink sink = jna;
        return sink == null || symbol == null ? null : sink.lookup(symbol);
    }

    public static long jnaEnter(Object fn, Object[] args) {
        JnaSink sink = jna;
        return sink == null ? 0L : sink.enter(fn, args);
    }

    public static void jnaExit(Object fn, Object library, Object[] args, Object result, long token) {
        JnaSink sink = jna;
        if (sink != null) {
            sink.exit(fn, library, args, result, token);
        }
    }

    /**
     * Called as a shutdown hook is added: true keeps JFR's hook back (the agent runs it after its
     * exit report, so that the report's JFR events reach a recording JFR dumps at exit).
     */
    public static boolean deferShutdownHook(Thread hook) {
        if (deferJfrShutdown && hook != null && JFR_SHUTDOWN_HOOK.equals(hook.getName()) && jfrShutdownHook == null) {
            jfrShutdownHook = hook;
            return true;
        }
        return false;
    }

    public static void exiting(int status) {
        if (exitStatus == -1) {
            exitStatus = status;
        }
    }

    public static void uncaught(Thread thread) {
        if (thread != null && thread == mainThread) {
            mainThreadFailed = true;
        }
    }
}
