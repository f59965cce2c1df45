package dev.ncclguard.log;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.ServiceConfigurationError;
import java.util.ServiceLoader;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The application's SLF4J, called through reflection: the agent must not link SLF4J, so that
 * whatever version and provider the application ships are the ones used. The agent's own lines go
 * to the logger {@value #AGENT_LOGGER}; the report of {@code text=log} to the loggers under
 * {@code dev.ncclguard.leak} and {@code dev.ncclguard.cleanup}.
 */
final class Slf4jSink implements Log.Sink {
    static final String AGENT_LOGGER = "dev.ncclguard.agent";

    private final Class<?> factory;
    private final Method getLogger;
    private final Method info;
    private final Method warn;
    private final Method error;
    private final Map<String, Object> loggers = new ConcurrentHashMap<>();

    private Slf4jSink(Class<?> factory, Method getLogger, Method info, Method warn, Method error) {
        this.factory = factory;
        this.getLogger = getLogger;
        this.info = info;
        this.warn = warn;
        this.error = error;
    }

    /** A sink, or why there is none. */
    record Lookup(Slf4jSink sink, String reason) {
    }

    /** Looks for SLF4J in each loader in turn; the first one that has it decides. */
    static Lookup find(List<ClassLoader> loaders) {
        for (ClassLoader loader : loaders) {
            Class<?> factory;
            try {
                factory = Class.forName("org.slf4j.LoggerFactory", true, loader);
            } catch (ClassNotFoundException | LinkageError e) {
                continue;
            }
            try {
                return bind(factory);
            } catch (Throwable t) {
                Throwable cause = t instanceof InvocationTargetException ? t.getCause() : t;
                return new Lookup(null, "the application's SLF4J failed (" + cause + ")");
            }
        }
        return new Lookup(null, "no SLF4J in the application");
    }

    private static Lookup bind(Class<?> factory) throws ReflectiveOperationException {
        ClassLoader api = factory.getClassLoader();
        Object loggerFactory = factory.getMethod("getILoggerFactory").invoke(null);
        String factoryName = loggerFactory == null ? "null" : loggerFactory.getClass().getName();
        if (factoryName.equals("org.slf4j.helpers.SubstituteLoggerFactory")) {
            return new Lookup(null, "the application's SLF4J has no provider yet (still initializing)");
        }
        // SLF4J 2 without a provider and SLF4J 1.7 without a binding answer with the NOP factory;
        // so does slf4j-nop, which an application picks on purpose and which is then honoured.
        if (factoryName.equals("org.slf4j.helpers.NOPLoggerFactory") && !declaresProvider(api)) {
            return new Lookup(null, "no SLF4J provider in the application");
        }
        Class<?> loggerType = Class.forName("org.slf4j.Logger", false, api);
        return new Lookup(new Slf4jSink(factory, factory.getMethod("getLogger", String.class),
                loggerType.getMethod("info", String.class),
                loggerType.getMethod("warn", String.class),
                loggerType.getMethod("error", String.class, Throwable.class)), null);
    }

    private static boolean declaresProvider(ClassLoader api) {
        if (System.getProperty("slf4j.provider") != null) {
            return true;
        }
        Class<?> spi;
        try {
            spi = Class.forName("org.slf4j.spi.SLF4JServiceProvider", false, api);
        } catch (ClassNotFoundException | LinkageError e) {
            // SLF4J 1.7: a binding is a class at a fixed name.
            return api != null && api.getResource("org/slf4j/impl/StaticLoggerBinder.class") != null;
        }
        try {
            Iterator<?> providers = ServiceLoader.load(spi, api).iterator();
            return providers.hasNext();
        } catch (ServiceConfigurationError e) {
            return false;
        }
    }

    @Override
    public void log(Log.Level level, String message, Throwable failure) {
        log(AGENT_LOGGER, level, message, failure);
    }

    void log(String logger, Log.Level level, String message, Throwable failure) {
        try {
            Object target = loggers.get(logger);
            if (target == null) {
                target = getLogger.invoke(null, logger);
                loggers.put(logger, target);
            }
            switch (level) {
                case INFO -> info.invoke(target, message);
                case WARN -> warn.invoke(target, message);
                default -> error.invoke(target, message, failure);
            }
        } catch (IllegalAccessException e) {
            throw new IllegalStateException(e);
        } catch (InvocationTargetException e) {
            throw new IllegalStateException(e.getCause());
        }
    }

    /**
     * Whether lines given now are written: {@link Log.Running#YES} for providers that write as
     * they are called (slf4j-simple) or drop on purpose (slf4j-nop) and for a Logback context that
     * is started; {@link Log.Running#NO} for a Logback context that was stopped (its
     * {@code <shutdownHook/>} stops it, and the application's hooks run before the agent's exit
     * hook); {@link Log.Running#UNKNOWN} for the rest (java.util.logging resets its handlers in a
     * shutdown hook; Log4j 2 stops in its own by default).
     */
    Log.Running running() {
        try {
            Object context = factory.getMethod("getILoggerFactory").invoke(null);
            String name = context == null ? "" : context.getClass().getName();
            switch (name) {
                case "ch.qos.logback.classic.LoggerContext":
                    return Boolean.TRUE.equals(context.getClass().getMethod("isStarted").invoke(context))
                            ? Log.Running.YES : Log.Running.NO;
                case "org.slf4j.simple.SimpleLoggerFactory":
                case "org.slf4j.impl.SimpleLoggerFactory":
                case "org.slf4j.helpers.NOPLoggerFactory":
                    return Log.Running.YES;
                default:
                    return Log.Running.UNKNOWN;
            }
        } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
            return Log.Running.UNKNOWN;
        }
    }

    /** The provider's logger factory in words, for a line that says where the lines went. */
    String backend() {
        try {
            Object context = factory.getMethod("getILoggerFactory").invoke(null);
            String name = context == null ? "?" : context.getClass().getName();
            return name.startsWith("ch.qos.logback.") ? "Logback" : name;
        } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
            return "?";
        }
    }
}
