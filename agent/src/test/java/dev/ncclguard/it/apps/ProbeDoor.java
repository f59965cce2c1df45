package dev.ncclguard.it.apps;

/**
 * The class the agent door probe (AgentDoorProbeApp) tries to define in java.base, renamed into
 * java.lang: from there, its initializer may export jdk.internal.misc, and does, to the
 * application's unnamed module. Never loaded under its own name.
 */
public final class ProbeDoor {
    static {
        Object.class.getModule().addExports("jdk.internal.misc", ClassLoader.getSystemClassLoader().getUnnamedModule());
    }

    private ProbeDoor() {
    }
}
