package dev.ncclguard.log;

import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;

/**
 * The agent's own logger. Lines go to stderr, prefixed {@code ncclguard: }, or with
 * {@code logging=application} to the application's SLF4J, reached reflectively so that the
 * application's SLF4J version and provider are the ones used. Never throws.
 */
public final class Log {
    static final String PREFIX = "ncclguard: ";
    /** Keys of {@link #once} are meant to be code sites; the cap guards against a key built from data. */
    static final int MAX_ONCE_KEYS = 256;
    static final String ONCE_OVERFLOW_KEY = "ncclguard.once.overflow";

    private static final Set<String> ONCE = ConcurrentHashMap.newKeySet();

    /** Where stderr lines go; null: System.err as it is at each line (no lambda: this loads in premain). */
    private static volatile Supplier<PrintStream> stderr;
    private static volatile Sink sink = new StderrSink(null);
    /** Null unless logging=application: the loaders to look for SLF4J in, or null for the defaults. */
    private static volatile List<ClassLoader> slf4jLoaders;
    private static volatile boolean application;
    private static boolean resolving;

    private Log() {
    }

    /**
     * {@code application = true} sends lines to the application's SLF4J. SLF4J is looked up at the
     * first line, not here, so that the agent does not initialize the application's logging before
     * the application has configured it.
     */
    public static void configure(boolean application) {
        configure(application, null, null);
    }

    /**
     * For tests: where to look for SLF4J (null: context then system class loader) and what stderr
     * is (null: System.err).
     */
    static synchronized void configure(boolean application, List<ClassLoader> loaders,
                                       Supplier<PrintStream> err) {
        stderr = err;
        Log.application = application;
        slf4jLoaders = loaders;
        sink = application ? null : new StderrSink(err);
        ONCE.clear();
    }

    public static void info(String message) {
        log(Level.INFO, message, null);
    }

    public static void warn(String message) {
        log(Level.WARN, message, null);
    }

    public static void error(String message, Throwable failure) {
        log(Level.ERROR, message, failure);
    }

    /** Logs {@code message} as a warning the first time {@code key} is seen, then never again. */
    public static void once(String key, String message) {
        once(key, message, null);
    }

    /** Logs {@code message} with {@code failure} the first time {@code key} is seen. */
    public static void once(String key, String message, Throwable failure) {
        if (ONCE.contains(key)) {
            return;
        }
        if (ONCE.size() >= MAX_ONCE_KEYS) {
            if (ONCE.add(ONCE_OVERFLOW_KEY)) {
                log(Level.WARN, "too many distinct agent failures; further ones are not logged", null);
            }
            return;
        }
        if (ONCE.add(key)) {
            log(failure == null ? Level.WARN : Level.ERROR, message, failure);
        }
    }

    private static void log(Level level, String message, Throwable failure) {
        try {
            Sink s = sink();
            try {
                s.log(level, message, failure);
            } catch (Throwable t) {
                // The application's logging may already be shut down at exit; the line still counts.
                new StderrSink(stderr).log(level, message, failure);
            }
        } catch (Throwable ignored) {
            // A logger that throws would break the promise that no agent failure reaches the application.
        }
    }

    private static Sink sink() {
        Sink s = sink;
        if (s != null) {
            return s;
        }
        synchronized (Log.class) {
            if (sink != null) {
                return sink;
            }
            if (resolving) {
                // SLF4J's own initialization ended up here: answer on stderr rather than recurse.
                return new StderrSink(stderr);
            }
            resolving = true;
            try {
                sink = resolve();
            } finally {
                resolving = false;
            }
            return sink;
        }
    }

    private static Sink resolve() {
        StderrSink err = new StderrSink(stderr);
        if (!application) {
            return err;
        }
        List<ClassLoader> loaders = slf4jLoaders != null ? slf4jLoaders : defaultLoaders();
        Slf4jSink.Lookup lookup = Slf4jSink.find(loaders);
        if (lookup.sink() != null) {
            return lookup.sink();
        }
        err.log(Level.WARN, "logging=application: " + lookup.reason() + "; logging to stderr instead", null);
        return err;
    }

    private static List<ClassLoader> defaultLoaders() {
        List<ClassLoader> loaders = new ArrayList<>(2);
        ClassLoader context = Thread.currentThread().getContextClassLoader();
        if (context != null) {
            loaders.add(context);
        }
        ClassLoader system = ClassLoader.getSystemClassLoader();
        if (system != context) {
            loaders.add(system);
        }
        return loaders;
    }

    enum Level { INFO, WARN, ERROR }

    interface Sink {
        void log(Level level, String message, Throwable failure);
    }

    /** Reads the stream at each line, so a System.setErr by the application is honoured. */
    static final class StderrSink implements Sink {
        private final Supplier<PrintStream> err;

        /** @param err the stream, or null for System.err */
        StderrSink(Supplier<PrintStream> err) {
            this.err = err;
        }

        @Override
        public void log(Level level, String message, Throwable failure) {
            StringWriter text = new StringWriter();
            PrintWriter out = new PrintWriter(text);
            out.print(PREFIX);
            out.println(message);
            if (failure != null) {
                failure.printStackTrace(out);
            }
            out.flush();
            // One print call, so lines from concurrent threads do not interleave.
            PrintStream stream = err == null ? System.err : err.get();
            stream.print(text);
            stream.flush();
        }
    }
}
