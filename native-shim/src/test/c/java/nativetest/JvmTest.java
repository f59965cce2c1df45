package nativetest;

import dev.ncclguard.bridge.interposer.Interposer;
import dev.ncclguard.bridge.interposer.Interposer.Upcall;
import java.util.ArrayList;
import java.util.List;

/**
 * libncclguard.so in a real JVM: JNI_OnLoad registers Interposer's natives and finds its upcalls,
 * the promotion binds a JNI library loaded afterwards, creations reach Java on the calling Java
 * thread (its Java frames visible) or on a library's pthread attached as a daemon, hot calls stay
 * in C, an exception thrown by an upcall is cleared, dying() stops upcalls, and a wrapped call
 * from an exit handler after the JVM died forwards. Run by native-shim/src/main/c's make test:
 * java -cp <classes> nativetest.JvmTest <libncclguard.so> <libjvmtest.so>
 */
public final class JvmTest {
    private static final List<String> FAILURES = new ArrayList<>();

    private static void check(boolean ok, String what) {
        System.out.println((ok ? "ok   " : "FAIL ") + what);
        if (!ok) {
            FAILURES.add(what);
        }
    }

    private static List<Upcall> upcalls(String kind, String fn) {
        List<Upcall> out = new ArrayList<>();
        synchronized (Interposer.UPCALLS) {
            for (Upcall u : Interposer.UPCALLS) {
                if (u.kind().equals(kind) && (fn == null || fn.equals(u.fn()))) {
                    out.add(u);
                }
            }
        }
        return out;
    }

    private static int total() {
        synchronized (Interposer.UPCALLS) {
            return Interposer.UPCALLS.size();
        }
    }

    public static void main(String[] args) throws InterruptedException {
        System.load(args[0]);
        if (args.length > 2 && args[2].equals("watchdog-fires")) {
            // nothing ends this JVM but the watchdog: the Makefile expects status 42
            check(Interposer.armExitWatchdog(300, 42), "armExitWatchdog(300, 42)");
            check(Interposer.armExitWatchdog(60_000, 1), "a second arm answers true and changes nothing");
            System.out.println(FAILURES.isEmpty() ? "armed" : FAILURES.size() + " failed");
            System.out.flush();
            Thread.sleep(FAILURES.isEmpty() ? 60_000 : 0);
            System.exit(1);
        }
        if (args.length > 2 && args[2].equals("watchdog-outrun")) {
            // exit(3) ends the process first: status 0, long before the watchdog's 60 s
            check(Interposer.armExitWatchdog(60_000, 42), "armExitWatchdog(60000, 42)");
            System.out.println(FAILURES.isEmpty() ? "all passed" : FAILURES.size() + " failed");
            Runtime.getRuntime().halt(FAILURES.isEmpty() ? 0 : 1);
        }
        if (args.length > 2 && args[2].equals("vmdeath")) {
            // no dying(): JVMTI's VMDeath alone must keep the exit handler's call out of the JVM
            check(Interposer.promote(), "promote()");
            System.load(args[1]);
            check(JvmNatives.createEvent() != 0 && total() == 1, "a creation reaches Java");
            JvmNatives.exitHandlerUsesCudart();
            System.out.println(FAILURES.isEmpty() ? "all passed" : FAILURES.size() + " failed");
            System.exit(FAILURES.isEmpty() ? 0 : 1);
        }
        check(Interposer.catalogSize() > 40 && "ncclCommInitRank".equals(Interposer.functionName(0)),
                "the natives are registered on Interposer");
        // a diagnostic flag off by default, one on in every JVM of these tests, none
        check(Interposer.vmFlag("ShowHiddenFrames") == 0 && Interposer.vmFlag("UseCompressedClassPointers") == 1
                && Interposer.vmFlag("NoSuchFlagAnywhere") == -1, "vmFlag reads HotSpot's bool flags");
        check(Interposer.promote(), "promote() puts the library in the global scope");
        // the JVM's own objects get the dlopen hook: System.load goes through it from here on
        check(Interposer.patchImports() > 0, "patchImports() patches the loaded objects");
        System.load(args[1]);

        long event = JvmNatives.createEvent();
        List<Upcall> created = upcalls("exit", "cudaEventCreate");
        check(event != 0 && created.size() == 1 && created.get(0).slot() >= 0,
                "a creation in a JNI library loaded after the promotion reaches exit() with its slot");
        Upcall c = created.isEmpty() ? null : created.get(0);
        check(c != null && c.thread().equals("main") && c.javaFrames().contains("nativetest.JvmNatives.createEvent")
                && c.javaFrames().contains("nativetest.JvmTest.main"),
                "exit() runs on the calling Java thread, whose Java frames show the JNI method");
        check(c != null && "libjvmtest.so".equals(Interposer.callerLibrary(c.caller()))
                && "Java_nativetest_JvmNatives_createEvent".equals(Interposer.callerSymbol(c.caller()))
                && Interposer.callerBacktrace(c.caller()) == null,
                "the caller is the JNI library and its entry point; a Java thread carries no native backtrace");

        long onThread = JvmNatives.createEventOnPthread();
        List<Upcall> flags = upcalls("exit", "cudaEventCreateWithFlags");
        Upcall p = flags.isEmpty() ? null : flags.get(0);
        check(onThread != 0 && p != null && p.thread().startsWith("ncclguard-native-") && p.daemon()
                && !p.javaFrames().contains("nativetest.JvmTest.main"),
                "a library's pthread is attached as a daemon named ncclguard-native-<tid>");
        String bt = p == null ? null : Interposer.callerBacktrace(p.caller());
        check(bt != null && bt.contains("libjvmtest.so"), "... and its creation carries a native backtrace");

        long stream = JvmNatives.createStream();
        int before = total();
        check(JvmNatives.recordAndQuery(event, stream, 1000) == 0 && total() == before,
                "1000 records and queries on C slots make no upcall");
        long[] out = new long[3];
        Interposer.eventsPending(new int[] {c == null ? -1 : c.slot()}, out);
        check(out[0] == 0 && out[2] == stream, "eventsPending reads the slot: complete, last recorded on the stream");

        long comm = JvmNatives.initComm();
        List<Upcall> inits = upcalls("exit", "ncclCommInitRank");
        List<Upcall> plugin = upcalls("pluginInit", null);
        long[] recs = new long[10 * 4];
        int n = Interposer.pluginComms(recs);
        check(comm != 0 && inits.size() == 1 && plugin.size() == 1 && plugin.get(0).thread().equals("main") && n == 1
                && inits.get(0).slots()[inits.get(0).slots().length - 2] == recs[0],
                "NCCL loads the same library as its profiler plugin: pluginInit on the Java thread, its record named in exit()");

        // on a thread of its own: this thread's creations under createEvent need no upcall any more
        Interposer.throwInExit = true;
        long[] thrownBox = new long[1];
        Thread thrower = new Thread(() -> thrownBox[0] = JvmNatives.createEvent(), "thrower");
        thrower.start();
        try {
            thrower.join();
        } catch (InterruptedException e) {
            throw new IllegalStateException(e);
        }
        long thrown = thrownBox[0];
        Interposer.throwInExit = false;
        long[] stats = new long[7];
        Interposer.stats(stats);
        check(thrown != 0 && stats[3] == 1, "an exception thrown by an upcall is cleared and counted, the call goes on");

        check(JvmNatives.destroyComm(comm) == 0 && upcalls("enter", "ncclCommDestroy").size() == 1
                && upcalls("exit", "ncclCommDestroy").get(0).token() == 42,
                "a release: enter() before, its token back in exit()");

        if (args.length > 2 && args[2].equals("creations")) {
            // a creation (and its release) with its Java stack, against the real functions
            Interposer.light = true;
            int pairs = 20000;
            long best = Long.MAX_VALUE;
            long bestReal = Long.MAX_VALUE;
            for (int round = 0; round < 7; round++) {
                best = Math.min(best, JvmNatives.createDestroy(pairs, false));
                bestReal = Math.min(bestReal, JvmNatives.createDestroy(pairs, true));
            }
            Interposer.light = false;
            System.out.printf("creations: wrapper %.2f us, real %.2f us, added %.2f us per cudaEventCreate+Destroy"
                    + " (with Java upcalls: exit's new Throwable, enter's token; min of 7 rounds of %d)%n",
                    best / 1e3 / pairs, bestReal / 1e3 / pairs, (best - bestReal) / 1e3 / pairs, pairs);
        }

        Interposer.dying();
        before = total();
        long late = JvmNatives.createEvent();
        check(late != 0 && total() == before, "after dying() the wrappers only forward");

        JvmNatives.exitHandlerUsesCudart();
        if (!FAILURES.isEmpty()) {
            System.out.println(FAILURES.size() + " failed");
            System.exit(1);
        }
        System.out.println("all passed");
    }

    private JvmTest() {
    }
}
