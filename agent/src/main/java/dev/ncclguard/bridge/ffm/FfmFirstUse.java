package dev.ncclguard.bridge.ffm;

import dev.ncclguard.bootstrap.state.HookState;
import dev.ncclguard.track.Tracker;
import java.lang.instrument.Instrumentation;

/**
 * Puts off the FFM bridge's installation ({@link FfmTransformer#install}: its transformer, ASM, a
 * retransformation of the JDK's native library classes) until the application first calls a
 * static method of SymbolLookup or Linker, where every FFM use starts: see
 * {@code Hooks.ffmFirstUse}. Most applications never do, and pay nothing for FFM at start-up.
 * This class links no ASM.
 */
public final class FfmFirstUse implements Runnable {
    private final Instrumentation inst;
    private final Tracker tracker;

    private FfmFirstUse(Instrumentation inst, Tracker tracker) {
        this.inst = inst;
        this.tracker = tracker;
    }

    /** Installs the bridge at the first FFM use from now on. */
    public static void arm(Instrumentation inst, Tracker tracker) {
        HookState.ffmInstall = new FfmFirstUse(inst, tracker);
    }

    @Override
    public void run() {
        FfmTransformer.install(inst, tracker);
    }
}
