package dev.ncclguard.bridge.interposer;

import dev.ncclguard.track.NativeAccess;
import dev.ncclguard.track.NativeSlots;

/** The tracker's way to the C slots: the library's natives, as they are. */
final class CSlots implements NativeSlots {
    /**
     * Interposer.stats's indexes of events made, and released, with no upcall (ncclguard_test.h's
     * NCCLGUARD_STAT_LAZY_CREATED and NCCLGUARD_STAT_LAZY_RELEASED).
     */
    private static final int LAZY_CREATED = 12;
    private static final int LAZY_RELEASED = 13;

    private final InterposerBridge bridge;
    /** Made when a stack is first named (it reads a JVM flag, and names nothing in most runs): not in premain. */
    private volatile NamedFrames frames;

    CSlots(InterposerBridge bridge) {
        this.bridge = bridge;
    }

    @Override
    public int adoptEvents(long[] out) {
        return Interposer.adoptEvents(out);
    }

    @Override
    public int adoptEvent(long handle, long[] out) {
        return Interposer.adoptEvent(handle, out);
    }

    @Override
    public StackTraceElement[] stackOf(int stack) {
        long[] ids = Interposer.stackFrameIds(stack);
        return ids != null ? frames().of(ids) : null;
    }

    private NamedFrames frames() {
        NamedFrames f = frames;
        if (f == null) {
            synchronized (this) {
                f = frames;
                if (f == null) {
                    f = new NamedFrames(Interposer::nameFrames, Interposer.vmFlag("ShowHiddenFrames") == 1);
                    frames = f;
                }
            }
        }
        return f;
    }

    @Override
    public void forgetNames() {
        NamedFrames f = frames;
        if (f != null) {
            f.forget();
        }
    }

    @Override
    public long unadoptedEvents() {
        return Interposer.lazyLive();
    }

    @Override
    public void unadoptedCounts(long[] out) {
        long[] stats = new long[16];
        Interposer.stats(stats);
        out[0] = stats[LAZY_CREATED];
        out[1] = stats[LAZY_RELEASED];
    }

    @Override
    public NativeAccess access(long caller) {
        return bridge.access(caller);
    }
    @Override
    public long token(int fn, int slot) {
        return Interposer.slotToken(fn, slot);
    }

    @Override
    public long exit(int fn, int slot, long other, int status, long token) {
        return Interposer.slotExit(fn, slot, other, status, token);
    }

    @Override
    public void release(int slot) {
        Interposer.releaseSlot(slot);
    }

    @Override
    public void eventToJava(long event) {
        Interposer.eventToJava(event);
    }

    @Override
    public long deviceSyncEnter(int device) {
        return Interposer.deviceSyncEnter(device);
    }

    @Override
    public void deviceSyncExit(int device, long token) {
        Interposer.deviceSyncExit(device, token);
    }

    @Override
    public void eventsPending(int[] slots, long[] out) {
        Interposer.eventsPending(slots, out);
    }

    @Override
    public void streamsPending(int[] slots, long[] out) {
        Interposer.streamsPending(slots, out);
    }
}
