package dev.ncclguard.bootstrap.state;

/**
 * What the boot hooks read, set by the agent: its bridges, and what it learns of the JVM's exit.
 * The hooks' package is exported to every module (woven code anywhere calls it); this one is not:
 * in the boot loader's module {@code dev.ncclguard.bootstrap}, it is exported to the agent's module
 * alone and opened to none, so no application code can read a bridge (and from it reach the
 * agent) or write what the exit hook believes (design.md, "no door into the JDK").
 */
public final class HookState {
    /** The JNA bridge; null until the agent is installed, and while it is off. */
    public static volatile JnaSink jna;

    /** The native-method bridge (JNA direct, JNI, JavaCPP, bindings); null until installed. */
    public static volatile NativeSink natives;

    /** The FFM bridge (java.lang.foreign, JDK 22+); null until installed. */
    public static volatile FfmSink ffm;

    /**
     * Installs the FFM bridge at the first call of a static method of SymbolLookup or Linker,
     * where every FFM use starts; null when there is nothing to install (before Java 22, or done).
     */
    public static volatile Runnable ffmInstall;

    /** The live view the JUnit extension reads through {@code bootstrap.Live}; null while not tracking. */
    public static volatile LiveView live;

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

    private HookState() {
    }
}
