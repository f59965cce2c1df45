package dev.ncclguard.samples;

import java.lang.instrument.Instrumentation;

/**
 * The samples jar as an agent of its own ({@code -javaagent:<samples jar>}, beside ncclguard's):
 * the Instrumentation ep-redefine redefines a class with, as a debugger's hot swap would.
 */
public final class Redefiner {
    private static volatile Instrumentation instrumentation;

    private Redefiner() {
    }

    public static void premain(String args, Instrumentation inst) {
        instrumentation = inst;
    }

    /** The Instrumentation, or null when the samples jar was not given as an agent. */
    static Instrumentation instrumentation() {
        return instrumentation;
    }
}
