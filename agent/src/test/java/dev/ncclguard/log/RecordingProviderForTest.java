package dev.ncclguard.log;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.slf4j.Logger;
import org.slf4j.Marker;
import org.slf4j.event.Level;
import org.slf4j.helpers.LegacyAbstractLogger;

/**
 * A provider the agent knows nothing of (so whether it still writes at exit is unknown to it), that
 * keeps each line as "LEVEL logger - message". LogTest reads its isolated class loader's copy of
 * {@link #LINES}.
 */
public final class RecordingProviderForTest extends ProviderForTest {
    public static final List<String> LINES = new CopyOnWriteArrayList<>();

    public RecordingProviderForTest() {
        super(Recording::new);
    }

    private static final class Recording extends LegacyAbstractLogger implements Logger {
        Recording(String name) {
            this.name = name;
        }

        @Override
        public boolean isTraceEnabled() {
            return true;
        }

        @Override
        public boolean isDebugEnabled() {
            return true;
        }

        @Override
        public boolean isInfoEnabled() {
            return true;
        }

        @Override
        public boolean isWarnEnabled() {
            return true;
        }

        @Override
        public boolean isErrorEnabled() {
            return true;
        }

        @Override
        protected String getFullyQualifiedCallerName() {
            return null;
        }

        @Override
        protected void handleNormalizedLoggingCall(Level level, Marker marker, String messagePattern, Object[] arguments,
                Throwable throwable) {
            LINES.add(level + " " + name + " - " + messagePattern);
        }
    }
}
