package dev.ncclguard.report;

import dev.ncclguard.track.StackNotKept;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/**
 * Turns a creating stack, captured cheaply as a Throwable, into report frames: the agent's, JNA's
 * and the JDK's reflection and proxy frames removed, so the first frame is the application's call.
 * Called only when a report is written, never on the tracked call.
 */
public final class StackFrames {
    public static final int MAX_FRAMES = 64;

    /**
     * The agent's own packages. Listed rather than all of dev.ncclguard, because the samples
     * (dev.ncclguard.samples) are an application whose frames belong in the report.
     */
    private static final String[] AGENT_PACKAGES = {
        "dev.ncclguard.agent.", "dev.ncclguard.bootstrap.", "dev.ncclguard.bridge.",
        "dev.ncclguard.catalog.", "dev.ncclguard.track.", "dev.ncclguard.cleanup.",
        "dev.ncclguard.report.", "dev.ncclguard.log.", "dev.ncclguard.cli.", "dev.ncclguard.shaded.",
    };
    private static final String[] PLUMBING_PACKAGES = {
        "com.sun.jna.", "jdk.internal.reflect.", "java.lang.reflect.", "sun.reflect.",
        "java.lang.invoke.", "com.sun.proxy.",
    };

    private StackFrames() {
    }

    /** The application's frames of {@code creation}, at most {@link #MAX_FRAMES} and a "... N more". */
    public static List<String> format(Throwable creation) {
        if (creation == null) {
            return List.of();
        }
        if (creation instanceof StackNotKept notKept) {
            return notKept.lines();
        }
        return format(creation.getStackTrace());
    }

    /**
     * Formats each distinct stack once, for one report: 100,000 leaks made at one place share one
     * immutable list (and writers can write it once). Not thread-safe.
     */
    public static final class Cache {
        private final Map<Frames, List<String>> formatted = new HashMap<>();
        /**
         * Handles created at one place share one captured stack (the tracker's CreationStacks):
         * found again by identity, without resolving its frames (getStackTrace copies them).
         */
        private final Map<Throwable, List<String>> byCapture = new IdentityHashMap<>();

        public List<String> format(Throwable creation) {
            if (creation == null) {
                return List.of();
            }
            if (creation instanceof StackNotKept notKept) {
                return notKept.lines();
            }
            List<String> frames = byCapture.get(creation);
            if (frames == null) {
                frames = resolve(creation);
                byCapture.put(creation, frames);
            }
            return frames;
        }

        /** Stacks captured apart that read the same are one list too. */
        private List<String> resolve(Throwable creation) {
            StackTraceElement[] trace = creation.getStackTrace();
            Frames key = new Frames(trace);
            List<String> frames = formatted.get(key);
            if (frames == null) {
                frames = List.copyOf(StackFrames.format(trace));
                formatted.put(key, frames);
            }
            return frames;
        }
    }

    /** A stack by the content of its elements (class, method, file, line, loader and module). */
    private static final class Frames {
        private final StackTraceElement[] trace;
        private final int hash;

        Frames(StackTraceElement[] trace) {
            this.trace = trace;
            this.hash = Arrays.hashCode(trace);
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Frames f && f.hash == hash && Arrays.equals(f.trace, trace);
        }

        @Override
        public int hashCode() {
            return hash;
        }
    }

    private static List<String> format(StackTraceElement[] trace) {
        List<String> frames = new ArrayList<>(Math.min(trace.length, MAX_FRAMES + 1));
        int kept = 0;
        for (StackTraceElement element : trace) {
            if (hidden(element.getClassName())) {
                continue;
            }
            if (kept < MAX_FRAMES) {
                frames.add(frame(element));
            }
            kept++;
        }
        if (kept > MAX_FRAMES) {
            frames.add("... " + (kept - MAX_FRAMES) + " more");
        }
        return frames;
    }

    /** Whether a frame of this class is agent, JNA or JDK plumbing rather than the application. */
    static boolean hidden(String className) {
        for (String prefix : AGENT_PACKAGES) {
            if (className.startsWith(prefix)) {
                return true;
            }
        }
        for (String prefix : PLUMBING_PACKAGES) {
            if (className.startsWith(prefix)) {
                return true;
            }
        }
        return isDynamicProxyModule(className) || className.substring(className.lastIndexOf('.') + 1).startsWith("$Proxy");
    }

    /** jdk.proxy1.$Proxy12 and the like: the modules the JDK defines proxies in. */
    private static boolean isDynamicProxyModule(String className) {
        if (!className.startsWith("jdk.proxy")) {
            return false;
        }
        int i = "jdk.proxy".length();
        int digits = i;
        while (i < className.length() && Character.isDigit(className.charAt(i))) {
            i++;
        }
        return i > digits && i < className.length() && className.charAt(i) == '.';
    }

    /**
     * {@code pkg.Cls.method(Cls.java:42)}: StackTraceElement.toString() without the class loader
     * and module prefixes it adds since Java 9.
     */
    static String frame(StackTraceElement element) {
        StringBuilder frame = new StringBuilder(96)
                .append(element.getClassName()).append('.').append(element.getMethodName()).append('(');
        if (element.isNativeMethod()) {
            frame.append("Native Method");
        } else if (element.getFileName() == null) {
            frame.append("Unknown Source");
        } else {
            frame.append(element.getFileName());
            if (element.getLineNumber() >= 0) {
                frame.append(':').append(element.getLineNumber());
            }
        }
        return frame.append(')').toString();
    }
}
