package dev.ncclguard.live;

/**
 * Whether JFR has been started in this JVM. Asked before any of the agent's JFR event classes is
 * touched: loading a jdk.jfr.Event subclass initializes some 60 classes of JFR's internals, which a
 * JVM that never records should not pay for. This class loads only jdk.jfr.FlightRecorder.
 */
final class JfrGate {
    private JfrGate() {
    }

    static boolean started() {
        return jdk.jfr.FlightRecorder.isInitialized();
    }
}
