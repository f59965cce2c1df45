package dev.ncclguard.log;

import org.slf4j.helpers.NOPLoggerFactory;

/** Stands for slf4j-nop: a provider that an application declares on purpose to silence logging. */
public final class NopProviderForTest extends ProviderForTest {
    public NopProviderForTest() {
        super(new NOPLoggerFactory());
    }
}
