package dev.ncclguard.agent;

import dev.ncclguard.track.Tracker;
import java.lang.instrument.ClassFileTransformer;
import java.lang.instrument.Instrumentation;
import java.security.ProtectionDomain;

/**
 * Tells the tracker before a class is redefined or retransformed (a debugger's hot swap, another
 * agent's instrumentation), which can move a bytecode index to another line: creating stacks not
 * yet read as lines are read first ({@link Tracker#classesRedefining}). A transformer is called
 * before the new version takes effect. It changes no class: every call returns null, and a class
 * load (no class being redefined) costs one test.
 */
final class RedefinitionWatch implements ClassFileTransformer {
    private final Tracker tracker;

    private RedefinitionWatch(Tracker tracker) {
        this.tracker = tracker;
    }

    /** Registered where retransformations reach it too (they are the ones other agents make). */
    static void install(Instrumentation inst, Tracker tracker) {
        inst.addTransformer(new RedefinitionWatch(tracker), true);
    }

    @Override
    public byte[] transform(ClassLoader loader, String className, Class<?> redefined, ProtectionDomain domain,
                            byte[] classfile) {
        if (redefined != null) {
            tracker.classesRedefining();
        }
        return null;
    }
}
