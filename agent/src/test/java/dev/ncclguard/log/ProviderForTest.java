package dev.ncclguard.log;

import org.slf4j.ILoggerFactory;
import org.slf4j.IMarkerFactory;
import org.slf4j.helpers.BasicMarkerFactory;
import org.slf4j.helpers.NOPMDCAdapter;
import org.slf4j.spi.MDCAdapter;
import org.slf4j.spi.SLF4JServiceProvider;

/**
 * What LogTest's SLF4J providers share: markers, no MDC, the API version they ask for; each names
 * only its loggers. Registered only inside LogTest's isolated class loaders, never on the test
 * class path.
 */
abstract class ProviderForTest implements SLF4JServiceProvider {
    private final ILoggerFactory loggers;
    private final IMarkerFactory markers = new BasicMarkerFactory();
    private final MDCAdapter mdc = new NOPMDCAdapter();

    ProviderForTest(ILoggerFactory loggers) {
        this.loggers = loggers;
    }

    @Override
    public final ILoggerFactory getLoggerFactory() {
        return loggers;
    }

    @Override
    public final IMarkerFactory getMarkerFactory() {
        return markers;
    }

    @Override
    public final MDCAdapter getMDCAdapter() {
        return mdc;
    }

    @Override
    public final String getRequestedApiVersion() {
        return "2.0.99";
    }

    @Override
    public final void initialize() {
    }
}
