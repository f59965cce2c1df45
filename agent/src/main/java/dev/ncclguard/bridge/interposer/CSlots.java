package dev.ncclguard.bridge.interposer;

import dev.ncclguard.track.NativeSlots;

/** The tracker's way to the C slots: the library's natives, as they are. */
final class CSlots implements NativeSlots {
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
