package dev.ncclguard.bridge.interposer;

import java.lang.ref.WeakReference;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;

/**
 * The native depot's frames (a jmethodID and a bytecode index each) as a Throwable's frames would
 * read: each distinct frame named once (JVMTI, in the native part) and its StackTraceElement shared
 * by every stack that holds it, so a named stack costs its array and its new frames. Frames a
 * Throwable leaves out ({@link HiddenFrames}) are left out, unless the JVM shows them
 * ({@code -XX:+ShowHiddenFrames}, which Throwables follow). A frame whose class was unloaded before
 * it was named reads {@value #UNLOADED} and is not kept. A kept frame holds its class weakly and is
 * used only while that class lives: a jmethodID names one method while its class is loaded, and
 * nothing promises it is never handed out again after that.
 */
final class NamedFrames {
    /** The class of a frame whose class was unloaded before the frame was named. */
    static final String UNLOADED = "(unloaded class)";
    /** Distinct frames kept; past it, frames are named again for each stack. */
    static final int MAX = 1 << 20;
    private static final Object HIDDEN = new Object();

    private record Frame(long method, int bci) {
    }

    /** A frame as named (a StackTraceElement, or HIDDEN), and its class, weakly. */
    private static final class Named extends WeakReference<Class<?>> {
        final Object frame;

        Named(Object frame, Class<?> c) {
            super(c);
            this.frame = frame;
        }
    }

    /** Replaced whole by {@link #forget}: a naming under way puts into the map it started with. */
    private volatile ConcurrentHashMap<Frame, Named> named = new ConcurrentHashMap<>();
    /** The native part's nameFrames: {Class[], String[] methods, String[] descriptors, String[] files, int[] lines}. */
    private final Function<long[], Object[]> namer;
    private final boolean showHidden;

    /** {@code showHidden}: the JVM's ShowHiddenFrames, under which Throwables keep hidden frames. */
    NamedFrames(Function<long[], Object[]> namer, boolean showHidden) {
        this.namer = namer;
        this.showHidden = showHidden;
    }

    /** The frames of {@code ids} (method, bytecode index pairs), top first; null if they cannot be named. */
    StackTraceElement[] of(long[] ids) {
        ConcurrentHashMap<Frame, Named> named = this.named;
        int n = ids.length / 2;
        Object[] found = new Object[n];
        long[] misses = new long[ids.length];
        int[] at = new int[n];
        int m = 0;
        for (int i = 0; i < n; i++) {
            Frame key = new Frame(ids[2 * i], (int) ids[2 * i + 1]);
            Named known = named.get(key);
            if (known != null && known.get() == null) {
                named.remove(key, known); // its class was unloaded: the method id may name another now
                known = null;
            }
            found[i] = known != null ? known.frame : null;
            if (found[i] == null) {
                misses[2 * m] = ids[2 * i];
                misses[2 * m + 1] = ids[2 * i + 1];
                at[m++] = i;
            }
        }
        if (m > 0 && !name(named, Arrays.copyOf(misses, 2 * m), at, found)) {
            return null;
        }
        List<StackTraceElement> frames = new ArrayList<>(n);
        for (Object f : found) {
            if (f != HIDDEN) {
                frames.add((StackTraceElement) f);
            }
        }
        return frames.toArray(new StackTraceElement[0]);
    }

    private boolean name(ConcurrentHashMap<Frame, Named> named, long[] misses, int[] at, Object[] found) {
        Object[] r = namer.apply(misses);
        if (r == null) {
            return false;
        }
        Class<?>[] classes = (Class<?>[]) r[0];
        String[] methods = (String[]) r[1];
        String[] descriptors = (String[]) r[2];
        String[] files = (String[]) r[3];
        int[] lines = (int[]) r[4];
        for (int k = 0; k < classes.length; k++) {
            Class<?> c = classes[k];
            String method = methods[k] != null ? methods[k] : "(unknown method)";
            if (c == null) {
                found[at[k]] = new StackTraceElement(UNLOADED, method, null, -1);
                continue;
            }
            Object f = !showHidden && HiddenFrames.hidden(c, method, descriptors[k])
                    ? HIDDEN : element(c, method, files[k], lines[k]);
            found[at[k]] = f;
            if (named.size() < MAX) {
                named.put(new Frame(misses[2 * k], (int) misses[2 * k + 1]), new Named(f, c));
            }
        }
        return true;
    }

    /** A frame of {@code c} with the loader and module names a Throwable's frame carries. */
    private static StackTraceElement element(Class<?> c, String method, String file, int line) {
        ClassLoader loader = c.getClassLoader();
        Module module = c.getModule();
        String version = module.isNamed() && module.getDescriptor() != null
                ? module.getDescriptor().rawVersion().orElse(null) : null;
        return new StackTraceElement(loader != null ? loader.getName() : null, module.isNamed() ? module.getName() : null,
                version, c.getName(), method, file, line);
    }

    /** Every frame is named again from now on (classes are about to be redefined: lines may move). */
    void forget() {
        named = new ConcurrentHashMap<>();
    }

    /** Distinct frames kept. */
    int size() {
        return named.size();
    }
}
