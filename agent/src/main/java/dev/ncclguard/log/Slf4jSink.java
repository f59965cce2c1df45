package dev.ncclguard.log;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.Iterator;
import java.util.List;
import java.util.ServiceConfigurationError;
import java.util.ServiceLoader;

/**
 * The application's SLF4J logger "ncclguard", called through reflection: the agent must not link
 * SLF4J, so that whatever version and provider the application ships are the ones used.
 */
final class Slf4jSink implements Log.Sink {
    static final String LOGGER_NAME = "ncclguard";

    private final Object logger;
    private final Method info;
    private final Method warn;
    private final Method error;

    private Slf4jSink(Object logger, Method info, Method warn, Method error) {
        this.logger = logger;
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
        Object logger = factory.getMethod("getLogger", String.class).invoke(null, LOGGER_NAME);
        Class<?> loggerType = Class.forName("org.slf4j.Logger", false, api);
        return new Lookup(new Slf4jSink(logger,
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
        try {
            switch (level) {
                case INFO -> info.invoke(logger, message);
                case WARN -> warn.invoke(logger, message);
                default -> error.invoke(logger, message, failure);
            }
        } catch (IllegalAccessException e) {
            throw new IllegalStateException(e);
        } catch (InvocationTargetException e) {
            throw new IllegalStateException(e.getCause());
        }
    }
}
