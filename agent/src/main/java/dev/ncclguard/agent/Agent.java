package dev.ncclguard.agent;

import java.lang.instrument.Instrumentation;

/** The agent's entry points: -javaagent (premain) and attach (agentmain). */
public final class Agent {
    private Agent() {
    }

    public static void premain(String args, Instrumentation inst) {
    }

    public static void agentmain(String args, Instrumentation inst) {
    }
}
