package dev.ncclguard.agent;

/**
 * Loads and links agent classes on a daemon thread, ahead of the thread that will need them: the
 * rest of premain while premain runs, and the classes of the first tracked JNA calls once JNA's
 * Function is loaded (the application's first NCCL call is some 100 ms of its own start-up
 * later). On a machine with a free core, reading and verifying them then overlaps the application
 * instead of adding to its start-up; where none is free it costs what loading them later would.
 * Nothing is initialized here: running static initializers on two threads could deadlock, loading
 * and linking cannot. A name that does not load is skipped; whoever needs it loads it as before.
 */
final class Preload implements Runnable {
    /** The classes premain loads after Installer, the last needed first: the two threads meet in the middle. */
    static final String[] PREMAIN = {
        "dev.ncclguard.agent.Lifecycle", "dev.ncclguard.bridge.natives.NativeMethods$Check",
        "dev.ncclguard.bridge.natives.ClassScan", "dev.ncclguard.bridge.natives.NativeMethodTransformer",
        "dev.ncclguard.bridge.natives.NativeBridge", "dev.ncclguard.bridge.natives.NativeMethods",
        "dev.ncclguard.agent.JfrShutdown", "dev.ncclguard.weave.ClassEdit",
        "dev.ncclguard.weave.ClassEdit$Unsupported", "dev.ncclguard.weave.HookWeaver",
        "dev.ncclguard.weave.HookTransformer", "dev.ncclguard.report.LiveReport",
        "dev.ncclguard.catalog.Catalog$Symbol", "dev.ncclguard.catalog.NativeFunction",
        "dev.ncclguard.catalog.Catalog$Def", "dev.ncclguard.catalog.Catalog", "dev.ncclguard.catalog.Change",
        "dev.ncclguard.track.NativeAccess", "dev.ncclguard.track.CallArgs", "dev.ncclguard.bridge.CallProtocol",
        "dev.ncclguard.bridge.jna.JnaBridge", "dev.ncclguard.live.LiveMonitor",
        "dev.ncclguard.track.ReleasedComms", "dev.ncclguard.track.LongMap$Stripe", "dev.ncclguard.track.LongMap",
        "dev.ncclguard.track.TrackerListener", "dev.ncclguard.track.Tracker$Config",
        "dev.ncclguard.catalog.Effect", "dev.ncclguard.track.CommRecord", "dev.ncclguard.track.StreamRecord",
        "dev.ncclguard.track.EventRecord", "dev.ncclguard.track.Streams", "dev.ncclguard.track.Communicators",
        "dev.ncclguard.track.Tracked", "dev.ncclguard.track.ReleaseClaim", "dev.ncclguard.track.Tracker",
        "dev.ncclguard.log.Log", "dev.ncclguard.live.AgentState",
    };

    /** The classes of a program's first tracked JNA calls, in the order they are needed. */
    static final String[] FIRST_JNA_CALLS = {
        "dev.ncclguard.bridge.ArrayArgs", "dev.ncclguard.bridge.BindingValues",
        "dev.ncclguard.bridge.jna.JnaNativeAccess", "dev.ncclguard.bridge.OwnCalls",
        "dev.ncclguard.bridge.OwnCalls$1", "dev.ncclguard.track.ThreadState",
        "dev.ncclguard.live.LiveMonitor$Registration", "dev.ncclguard.bridge.BindingValues$Reader",
        "dev.ncclguard.bridge.BindingValues$GeneratedPointerReader",
        "dev.ncclguard.bridge.BindingValues$NumberReader", "dev.ncclguard.bridge.BindingValues$LongArrayReader",
        "dev.ncclguard.bridge.BindingValues$IntArrayReader", "dev.ncclguard.bridge.BindingValues$ByteArrayReader",
        "dev.ncclguard.bridge.BindingValues$ObjectArrayReader", "dev.ncclguard.bridge.BindingValues$BufferReader",
        "dev.ncclguard.bridge.BindingValues$SegmentReader", "dev.ncclguard.bridge.JnaHandles",
        "dev.ncclguard.track.CommIds", "dev.ncclguard.track.CreationStacks",
        "dev.ncclguard.track.CreationStacks$Key", "dev.ncclguard.track.CreationStacks$Held",
        "dev.ncclguard.live.JfrGate", "dev.ncclguard.track.CommLife",
    };

    private final String[] names;

    private Preload(String[] names) {
        this.names = names;
    }

    /** Starts loading {@code names} on a daemon thread; never throws. */
    static void start(String threadName, String[] names) {
        try {
            thread(threadName, names).start();
        } catch (Throwable t) {
            // nothing lost: each class loads when it is needed
        }
    }

    /** The daemon thread that loads {@code names} once started, or null if none can be made. */
    static Thread thread(String threadName, String[] names) {
        try {
            Thread t = new Thread(new Preload(names), threadName);
            t.setDaemon(true);
            return t;
        } catch (Throwable t) {
            return null;
        }
    }

    @Override
    public void run() {
        ClassLoader loader = Preload.class.getClassLoader();
        for (String name : names) {
            try {
                // getDeclaredConstructors links (verifies) the class without initializing it
                Class.forName(name, false, loader).getDeclaredConstructors();
            } catch (Throwable t) {
                // skipped: loaded where it is needed
            }
        }
    }
}
