package dev.ncclguard.bridge.interposer;

import dev.ncclguard.catalog.Catalog;
import dev.ncclguard.catalog.NativeFunction;
import dev.ncclguard.track.CallArgs;

/**
 * A native call's arguments as the interposer's upcalls carry them: the C arguments in the
 * catalog's slot kinds (pointers and handles as addresses, integers sign-extended, a struct by
 * value as its address), then the calling thread's device, the first profiler record inited
 * during the call and how many. Pointers are read where they point, inside the call.
 */
final class SlotArgs implements CallArgs {
    private final long[] slots;
    private final int nargs;
    private final int slot;

    /** @param slot the C slot made for a created event or stream, -1 for none */
    SlotArgs(long[] slots, int slot) {
        this.slots = slots;
        this.nargs = Math.max(0, slots.length - 3);
        this.slot = slot;
    }

    static NativeFunction function(int fn) {
        return fn >= 0 && fn < Catalog.size() ? Catalog.all().get(fn) : null;
    }

    private long at(int index) {
        return index >= 0 && index < nargs ? slots[index] : 0;
    }

    /** The calling thread's device as the CUDA runtime said it is at the call, -1 if not given. */
    int device() {
        return slots.length >= 3 ? (int) slots[slots.length - 3] : -1;
    }

    @Override
    public long handle(int index) {
        return at(index);
    }

    @Override
    public long handleOut(int index) {
        return NativeMemory.getLong(at(index));
    }

    @Override
    public long handleOut(int index, int i) {
        long p = at(index);
        return p == 0 || i < 0 ? 0 : NativeMemory.getLong(p + 8L * i);
    }

    @Override
    public int intArg(int index) {
        return (int) at(index);
    }

    @Override
    public int intArray(int index, int i, int fallback) {
        long p = at(index);
        return p == 0 || i < 0 ? fallback : NativeMemory.getInt(p + 4L * i, fallback);
    }

    @Override
    public byte[] bytes(int index, int length) {
        return NativeMemory.bytes(at(index), length);
    }

    @Override
    public int nativeSlot() {
        return slot;
    }

    @Override
    public boolean fromNativeCode() {
        return true;
    }

    @Override
    public long profilerInits() {
        if (slots.length < 3) {
            return -1;
        }
        long first = slots[slots.length - 2];
        long count = slots[slots.length - 1];
        return count > 0 && first > 0 ? first << 32 | (count & 0xffffffffL) : -1;
    }
}
