package dev.ncclguard.track;

/**
 * The hot state of the events and streams native code made or first used, kept where the native
 * part of the agent updates it without a JVM transition (a C slot each, in libncclguard.so). The
 * tracker holds a record per such handle (its creation, stack, claim) whose state lies in a slot
 * ({@link Tracked#nativeSlot}); a Java bridge's hot call on one comes here (rare: mixed use), and
 * snapshots read the slots in batches. Set by the interposer bridge ({@link Tracker#nativeSlots}).
 */
public interface NativeSlots {
    /** Before a Java hot call of {@code fn} on a slot: the token its exit needs. */
    long token(int fn, int slot);

    /**
     * After it: applies a successful call to the slot. For a record of event {@code other} on a
     * C stream, returns the event's slot (its state is C's from then on); else -1.
     */
    long exit(int fn, int slot, long other, int status, long token);

    /** The tracker's record of a slot ended: C may reuse it once C ended it too. */
    void release(int slot);

    /** A Java record of a C event on a Java stream: the event's state is the tracker's from now on. */
    void eventToJava(long event);

    /** Before a Java cudaDeviceSynchronize: the token for {@link #deviceSyncExit}. */
    long deviceSyncEnter(int device);

    /** After a successful one: C's streams of {@code device} are complete up to its start. */
    void deviceSyncExit(int device, long token);

    /** Per event slot 3 longs: pending 1/0 (-1: not live), the last record's stream slot, its stream handle. */
    void eventsPending(int[] slots, long[] out);

    /** Per stream slot its pending ops (-1: not live). */
    void streamsPending(int[] slots, long[] out);

    /**
     * Takes over events native code made with no upcall ({@link NativeCreations}), 8 longs each:
     * slot, handle, function id, stack id, thread id, created (epoch ms), caller, device. Returns
     * how many were written; 0 where the native part makes none.
     */
    default int adoptEvents(long[] out) {
        return 0;
    }

    /** The one such event of {@code handle}, into out: 1 if there was one. */
    default int adoptEvent(long handle, long[] out) {
        return 0;
    }

    /**
     * The frames of the native depot's stack {@code stack}, named as a Throwable's would be (the
     * frames of hidden classes left out, as the VM leaves them out); null if it has none.
     */
    default StackTraceElement[] stackOf(int stack) {
        return null;
    }

    /**
     * Drops the frame names {@link #stackOf} made so far: classes are about to be redefined, and
     * the same method and bytecode index may read another line afterwards.
     */
    default void forgetNames() {
    }

    /** Such events alive now and not taken over. */
    default long unadoptedEvents() {
        return 0;
    }

    /** Such events made, and of them released, with no upcall: 2 longs. */
    default void unadoptedCounts(long[] out) {
    }

    /** The access of a native call site ({@code long caller}), for the records of such events. */
    default NativeAccess access(long caller) {
        return null;
    }
}
