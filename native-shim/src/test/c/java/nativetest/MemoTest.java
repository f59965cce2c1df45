package nativetest;

import dev.ncclguard.bridge.interposer.Interposer;
import dev.ncclguard.bridge.interposer.Interposer.Upcall;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The memo of a creation's Java stack per JNI call (ng_hotspot.c) in a real HotSpot: events made
 * with no upcall and adopted later carry their own call's exact stack, the JNI method's frame
 * first. (a) many creations in one long JNI call, a collection half way; (b) one native site
 * reached from two Java callers in separate JNI calls with equal frame shapes (what a memo keyed
 * on anything but the call gets wrong: with NCCLGUARD_TEST_NAIVE_MEMO=1 it must fail); (c) a
 * native method that calls back into Java, which calls another native method that creates.
 * java -cp <classes> nativetest.MemoTest <libncclguard.so> <libjvmtest.so>
 */
public final class MemoTest {
    private static final List<String> FAILURES = new ArrayList<>();
    private static final int HITS = 15;
    private static final int TAKES = 16;

    private static void check(boolean ok, String what) {
        System.out.println((ok ? "ok   " : "FAIL ") + what);
        if (!ok) {
            FAILURES.add(what);
        }
    }

    // called back from MemoNatives.create and outer
    static void gc() {
        System.gc();
    }

    static long inner() {
        return MemoNatives.innerCreate();
    }

    // (b): two callers, the same helper, the same depth
    static final class Helper {
        static long[] call(int n) {
            return MemoNatives.create(n, false);
        }
    }

    static long[] taskA(int n) {
        return Helper.call(n);
    }

    static long[] taskB(int n) {
        return Helper.call(n);
    }

    /** (d): what Unloadable calls from its own class loader. */
    public static long[] createFor(int n) {
        return MemoNatives.create(n, false);
    }

    /** Defines nativetest.Unloadable itself (not its parent), so that it can be unloaded. */
    private static final class OwnLoader extends ClassLoader {
        OwnLoader() {
            super(MemoTest.class.getClassLoader());
        }

        @Override
        protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
            if (!name.equals("nativetest.Unloadable")) {
                return super.loadClass(name, resolve);
            }
            synchronized (getClassLoadingLock(name)) {
                Class<?> c = findLoadedClass(name);
                if (c == null) {
                    try (java.io.InputStream in = getParent().getResourceAsStream("nativetest/Unloadable.class")) {
                        byte[] b = in.readAllBytes();
                        c = defineClass(name, b, 0, b.length);
                    } catch (java.io.IOException e) {
                        throw new ClassNotFoundException(name, e);
                    }
                }
                return c;
            }
        }
    }

    /** (d): events made through Unloadable.call; the class, weakly. */
    private static java.lang.ref.WeakReference<Class<?>> createThroughAnUnloadableClass(long[][] handles) throws Exception {
        Class<?> c = new OwnLoader().loadClass("nativetest.Unloadable");
        handles[0] = (long[]) c.getMethod("call", int.class).invoke(null, 5);
        return new java.lang.ref.WeakReference<>(c);
    }

    static long[] longCall(int n) {
        return MemoNatives.create(n, true);
    }

    /** The Java frames each stack id was first seen with (the exit upcall's), ours only. */
    private static Map<Long, List<String>> stacks() {
        Map<Long, List<String>> out = new HashMap<>();
        synchronized (Interposer.UPCALLS) {
            for (Upcall u : Interposer.UPCALLS) {
                if (u.kind().equals("exit") && u.slot() >= 0 && (u.token() & 0xffffffffL) != 0) {
                    List<String> f = new ArrayList<>(u.javaFrames());
                    f.removeIf(s -> s.startsWith("dev.ncclguard."));
                    out.putIfAbsent(u.token() & 0xffffffffL, f);
                }
            }
        }
        return out;
    }

    private static long[] stats() {
        long[] s = new long[TAKES + 1];
        Interposer.stats(s);
        return s;
    }

    /** handle -> the stack of its adopted event (C's events made with no upcall). */
    private static Map<Long, List<String>> adopted() {
        long[] out = new long[8 * 100_000];
        int n = Interposer.adoptEvents(out);
        Map<Long, List<String>> stacks = stacks();
        Map<Long, List<String>> byHandle = new HashMap<>();
        for (int i = 0; i < n; i++) {
            long id = out[8 * i + 3];
            byHandle.put(out[8 * i + 1], stacks.computeIfAbsent(id, MemoTest::named));
        }
        return byHandle;
    }

    /**
     * A stack no creation took the upcall at (a new stack under a JNI method an upcall held a
     * creation of): its frames as the native depot names them, hidden classes left out.
     */
    private static List<String> named(long id) {
        long[] ids = Interposer.stackFrameIds((int) id);
        Object[] named = ids != null ? Interposer.nameFrames(ids) : null;
        if (named == null) {
            return List.of("unknown stack " + id);
        }
        Class<?>[] classes = (Class<?>[]) named[0];
        String[] methods = (String[]) named[1];
        List<String> frames = new ArrayList<>();
        for (int i = 0; i < classes.length; i++) {
            if (classes[i] == null || !classes[i].isHidden()) {
                frames.add((classes[i] == null ? "?" : classes[i].getName()) + "." + methods[i]);
            }
        }
        return frames;
    }

    /** Each of handles that was adopted has a stack starting with first, then the next ones; how many were. */
    private static int matching(Map<Long, List<String>> adopted, long[] handles, String... frames) {
        int n = 0;
        for (long h : handles) {
            List<String> s = adopted.get(h);
            if (s == null) {
                continue;
            }
            boolean ok = s.size() >= frames.length;
            for (int i = 0; ok && i < frames.length; i++) {
                ok = s.get(i).equals(frames[i]);
            }
            if (!ok) {
                System.out.println("     handle " + h + ": " + s);
                return -1;
            }
            n++;
        }
        return n;
    }

    public static void main(String[] args) {
        System.load(args[0]);
        check(Interposer.promote(), "promote()");
        System.load(args[1]);

        // (0) the process's first creations, in a JNI call whose block is full of freed references
        // (PyTorch in an embedded CPython: the agent's upcalls for its streams came first in the same
        // call): the memo's self-check must not take the freed slot it gets for the offsets' fault
        long[] before = stats();
        long[] first = MemoNatives.createAfterRefs(200, 100);
        long[] after = stats();
        int n0 = matching(adopted(), first, "nativetest.MemoNatives.createAfterRefs", "nativetest.MemoTest.main");
        check(n0 >= 95 && after[HITS] - before[HITS] >= 95, "(0) 100 creations after 200 local references made and"
                + " deleted in the same JNI call: their stacks came from the memo (" + (after[HITS] - before[HITS])
                + " hits), each adopted one (" + n0 + ") with that call's stack");

        // (a) one long JNI call
        before = stats();
        long[] many = longCall(1000);
        after = stats();
        Map<Long, List<String>> adopted = adopted();
        int n = matching(adopted, many, "nativetest.MemoNatives.create", "nativetest.MemoTest.longCall",
                "nativetest.MemoTest.main");
        check(n >= 990, "(a) 1000 creations in one JNI call, a GC half way: each adopted one (" + n
                + ") carries that call's stack, the JNI method first");
        long hits = after[HITS] - before[HITS];
        long takes = after[TAKES] - before[TAKES];
        check(hits >= 990 && takes <= 3, "(a) ... their stacks came from the memo (" + hits + " hits, " + takes
                + " memos taken)");

        // (b) two Java callers, separate JNI calls, the same native site at the same depth
        List<long[]> a = new ArrayList<>();
        List<long[]> b = new ArrayList<>();
        for (int round = 0; round < 20; round++) {
            a.add(taskA(5));
            b.add(taskB(5));
        }
        adopted = adopted();
        int na = 0;
        int nb = 0;
        for (int i = 0; i < a.size() && na >= 0 && nb >= 0; i++) {
            int x = matching(adopted, a.get(i), "nativetest.MemoNatives.create", "nativetest.MemoTest$Helper.call",
                    "nativetest.MemoTest.taskA", "nativetest.MemoTest.main");
            int y = matching(adopted, b.get(i), "nativetest.MemoNatives.create", "nativetest.MemoTest$Helper.call",
                    "nativetest.MemoTest.taskB", "nativetest.MemoTest.main");
            na = x < 0 ? -1 : na + x;
            nb = y < 0 ? -1 : nb + y;
        }
        check(na >= 70 && nb >= 70, "(b) two callers of one native site: each adopted handle carries its own caller's"
                + " stack (taskA " + na + ", taskB " + nb + ")");

        // (c) native -> Java -> native
        long[] pairs = MemoNatives.outer(50);
        adopted = adopted();
        long[] outerHandles = new long[50];
        long[] innerHandles = new long[50];
        for (int i = 0; i < 50; i++) {
            outerHandles[i] = pairs[2 * i];
            innerHandles[i] = pairs[2 * i + 1];
        }
        int no = matching(adopted, outerHandles, "nativetest.MemoNatives.outer", "nativetest.MemoTest.main");
        int ni = matching(adopted, innerHandles, "nativetest.MemoNatives.innerCreate", "nativetest.MemoTest.inner",
                "nativetest.MemoNatives.outer", "nativetest.MemoTest.main");
        check(no >= 45 && ni >= 45, "(c) a native method calling back into Java that calls a creating native method:"
                + " the outer creations carry the outer stack (" + no + "), the inner ones the inner stack (" + ni + ")");

        // (d) a new stack one of whose classes is unloaded before its events are adopted: that frame
        // reads as unloaded (JVMTI answers INVALID_METHODID for its method), the others keep their
        // names, nothing crashes
        long[][] unloadable = new long[1][];
        java.lang.ref.WeakReference<Class<?>> gone;
        try {
            gone = createThroughAnUnloadableClass(unloadable);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
        for (int i = 0; i < 50 && gone.get() != null; i++) {
            System.gc();
        }
        check(gone.get() == null, "(d) ... the class loader and its class were unloaded");
        adopted = adopted();
        List<String> s = adopted.get(unloadable[0][unloadable[0].length - 1]);
        check(s != null && s.size() > 3 && s.get(0).equals("nativetest.MemoNatives.create")
                && s.get(1).equals("nativetest.MemoTest.createFor") && s.get(2).startsWith("?.")
                && s.get(s.size() - 1).equals("nativetest.MemoTest.main"),
                "(d) a stack named after its class was unloaded: that frame reads as unloaded, the others named " + s);

        if (!FAILURES.isEmpty()) {
            System.out.println(FAILURES.size() + " failed");
            System.exit(1);
        }
        System.out.println("all passed");
    }

    private MemoTest() {
    }
}
