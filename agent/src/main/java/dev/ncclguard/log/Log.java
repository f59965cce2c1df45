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
 * {@code logging=application} to the application's SLF4J (logger {@code dev.ncclguard.agent}),
 * reached reflectively so that the application's SLF4J version and provider are the ones used; the
 * report of {@code text=log} goes there too ({@link #logReport}). SLF4J is looked for through the
 * application's class loaders (the one of the thread of its first NCCL or CUDA call, the calling
 * thread's, the system class loader), never the agent's own. During the exit, lines go to stderr
 * as well when the application's logging may already be stopped. Never throws.
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
    /** For tests: the loaders to look for SLF4J in, or null for the defaults. */
    private static volatile List<ClassLoader> slf4jLoaders;
    /** The application's loaders learned as it runs (the first NCCL or CUDA call's context loader). */
    private static final List<ClassLoader> APPLICATION_LOADERS = new java.util.concurrent.CopyOnWriteArrayList<>();
    private static volatile boolean application;
    private static boolean resolving;
    /** The application's SLF4J, once looked for (null: not yet, or to look again). */
    private static volatile Slf4jSink.Lookup slf4j;
    /** Whether the fallback to stderr was said: once, however often SLF4J is looked for again. */
    private static boolean fallbackSaid;
    /** Null until the exit hook starts; then whether the application's logging still writes. */
    private static volatile Running exit;

    /** Whether the application's logging writes what it is given now. */
    public enum Running { YES, NO, UNKNOWN }

    /** One line of the report for the application's logging ({@code text=log}). */
    public record Entry(String logger, boolean warn, String message) {
    }

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
        slf4j = null;
        fallbackSaid = false;
        exit = null;
        APPLICATION_LOADERS.clear();
        ONCE.clear();
    }

    /**
     * A class loader of the application (the context loader of the thread that made its first NCCL
     * or CUDA call): where its SLF4J is, in a server or a fat jar, when the system class loader
     * has none. If SLF4J was looked for and not found, it is looked for again.
     */
    public static void applicationLoader(ClassLoader loader) {
        if (loader == null || APPLICATION_LOADERS.contains(loader)) {
            return;
        }
        APPLICATION_LOADERS.add(loader);
        synchronized (Log.class) {
            Slf4jSink.Lookup found = slf4j;
            if (found != null && found.sink() == null) {
                slf4j = null;
                if (application) {
                    sink = null;
                }
            }
        }
    }

    /**
     * The exit hook has started, after the application's shutdown hooks: from now on a line for
     * the application's SLF4J also goes to stderr unless its provider is known to be still writing
     * (a stopped Logback context gets none; stderr alone).
     */
    public static void exiting() {
        try {
            Sink s = application ? sink() : null;
            exit = s instanceof Slf4jSink slf ? slf.running() : Running.YES;
        } catch (Throwable t) {
            exit = Running.UNKNOWN;
        }
    }

    /**
     * A warning that must not be lost, such as the one before {@code _exit}: always on stderr, and
     * in the application's logging too with {@code logging=application} while it may still write
     * (an asynchronous appender would not get to it before the process ends).
     */
    public static void exitWarning(String message) {
        try {
            new StderrSink(stderr).log(Level.WARN, message, null);
            if (application && exit != Running.NO) {
                Sink s = sink();
                if (s instanceof Slf4jSink) {
                    s.log(Level.WARN, message, null);
                }
            }
        } catch (Throwable ignored) {
            // stderr had it first
        }
    }

    /**
     * text=log: each line to the application's SLF4J, at WARN or INFO, under its logger. Returns
     * null when the application's logging took them and is known to write them; otherwise what the
     * caller says on stderr before it writes the report there as well: no SLF4J, a logging that
     * is stopped (nothing was given to it), or one that may be (the lines were given to it too).
     */
    public static String logReport(List<Entry> entries) {
        try {
            Slf4jSink.Lookup found = slf4j();
            Slf4jSink target = found.sink();
            if (target == null) {
                return found.reason() + "; the report follows on stderr";
            }
            Running running = target.running();
            if (running == Running.NO) {
                return "the application's logging (" + target.backend() + ") was stopped before the agent's exit hook"
                        + " ran (an application shutdown hook stops it, as Logback's <shutdownHook/> does); the"
                        + " report follows on stderr";
            }
            for (Entry e : entries) {
                target.log(e.logger(), e.warn() ? Level.WARN : Level.INFO, e.message(), null);
            }
            return running == Running.YES ? null
                    : "the report went to the application's logging (" + target.backend() + "), which may have"
                    + " stopped in a shutdown hook of its own before the agent's exit hook ran; a copy follows on stderr";
        } catch (Throwable t) {
            return "the application's logging failed (" + t + "); the report follows on stderr";
        }
    }

    public static void info(String message) {
        log(Level.INFO, message, null);
    }

    /** log-level=debug: what the agent loaded, instrumented, and tracks, a line each. */
    private static volatile boolean debug;

    public static void debug(boolean on) {
        debug = on;
    }

    public static boolean debugging() {
        return debug;
    }

    /** A line of log-level=debug, "ncclguard: debug: ..."; nothing at the default level. */
    public static void debug(String message) {
        if (debug) {
            log(Level.INFO, "debug: " + message, null);
        }
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
            Running atExit = exit;
            if (atExit != null && s instanceof Slf4jSink) {
                // the exit: the application's logging may have been stopped by its own hooks
                if (atExit != Running.NO) {
                    try {
                        s.log(level, message, failure);
                    } catch (Throwable t) {
                        atExit = Running.NO;
                    }
                }
                if (atExit != Running.YES) {
                    new StderrSink(stderr).log(level, message, failure);
                }
                return;
            }
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
        Slf4jSink.Lookup lookup = slf4j();
        if (lookup.sink() != null) {
            return lookup.sink();
        }
        if (!fallbackSaid) {
            fallbackSaid = true;
            err.log(Level.WARN, "logging=application: " + lookup.reason() + "; logging to stderr instead", null);
        }
        return err;
    }

    /** The application's SLF4J, looked for at the first need (and again after a new loader). */
    private static Slf4jSink.Lookup slf4j() {
        Slf4jSink.Lookup found = slf4j;
        if (found == null) {
            synchronized (Log.class) {
                found = slf4j;
                if (found == null) {
                    found = Slf4jSink.find(slf4jLoaders != null ? slf4jLoaders : defaultLoaders());
                    slf4j = found;
                }
            }
        }
        return found;
    }

    private static List<ClassLoader> defaultLoaders() {
        List<ClassLoader> loaders = new ArrayList<>(APPLICATION_LOADERS);
        ClassLoader context = Thread.currentThread().getContextClassLoader();
        if (context != null && !loaders.contains(context)) {
            loaders.add(context);
        }
        ClassLoader system = ClassLoader.getSystemClassLoader();
        if (!loaders.contains(system)) {
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
