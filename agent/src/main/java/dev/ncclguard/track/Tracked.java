package dev.ncclguard.track;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;

/**
 * What every tracked handle keeps from its creation. Fields are final and shared (api, bridge and
 * thread name are references to strings that already exist), so a record stays small.
 *
 * <p>Who may release the handle is settled by one atomic word, {@link #owner}: {@link #LIVE};
 * {@code n > 0} releases of the application in flight (a destroy, and an abort of it from another
 * thread); or {@link #AGENT}, claimed by the exit-time cleanup. A successful release by the
 * application leaves the word above zero for good, so the agent can never claim a handle the
 * application released, and the application never enters a release of one the agent claimed.
 */
abstract class Tracked implements ReleaseClaim {
    static final int LIVE = 0;
    static final int AGENT = -1;
    private static final AtomicIntegerFieldUpdater<Tracked> OWNER =
            AtomicIntegerFieldUpdater.newUpdater(Tracked.class, "owner");
    private static final VarHandle LOCK;
    /** Spins of a waiting writer before it yields its core to the holder, which may be preempted. */
    private static final int SPINS = 64;

    static {
        try {
            LOCK = MethodHandles.lookup().findVarHandle(Tracked.class, "lock", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** The native address as the application sees it (0x0 for the legacy default stream). */
    final long handle;
    /** Unique per record: a release's enter/exit pair ends only the record it saw. */
    final long serial;
    final String api;
    final String bridge;
    final String thread;
    final long createdAtMillis;
    /** The creating stack, captured unformatted; null when stacks=off. */
    final Throwable creation;
    final int device;
    final NativeAccess access;
    private volatile int owner;
    /**
     * The record's own lock, the version of what it guards, and whether the record has ended:
     * bit 0 {@link #ENDED}, bit 1 {@link #HELD}, a version above. Taking the lock is one atomic
     * instruction and releasing it a release store, where a monitor costs an atomic instruction
     * each way; readers take nothing: they read the fields between two equal versions, the lock
     * free (a seqlock). One int for the three: a record is no bigger than with the flag alone.
     */
    private volatile int lock;
    /** Bits of {@link #lock}. */
    private static final int ENDED = 1;
    private static final int HELD = 2;

    Tracked(long handle, long serial, String api, String bridge, String thread, long createdAtMillis,
            Throwable creation, int device, NativeAccess access) {
        this.handle = handle;
        this.serial = serial;
        this.api = api;
        this.bridge = bridge;
        this.thread = thread;
        this.createdAtMillis = createdAtMillis;
        this.creation = creation;
        this.device = device;
        this.access = access;
    }

    /** Whether the record has left its map (see {@link #end}). */
    final boolean ended() {
        return ((int) LOCK.getAcquire(this) & ENDED) != 0;
    }

    /**
     * The record leaves its map (released, or replaced by a new record at the address): a call
     * that found it before the native call then treats it as the map would, as gone.
     */
    final void end() {
        lock();
        LOCK.setOpaque(this, (int) LOCK.getOpaque(this) | ENDED);
        unlock();
    }

    /**
     * Takes the record's lock. Held for a few stores only, never across a call that may block or
     * allocate; a writer that finds it held spins, then yields. Everything that changes the lock
     * word holds the lock, so that {@link #unlock} may be a plain release store.
     */
    final void lock() {
        int spins = 0;
        while (true) {
            int v = (int) LOCK.getOpaque(this);
            if ((v & HELD) == 0 && LOCK.compareAndSet(this, v, v | HELD)) {
                // the guarded stores that follow must not pass the held bit
                VarHandle.storeStoreFence();
                return;
            }
            spins = backOff(spins);
        }
    }

    /** One wait of a thread that found the lock held; returns the spins to pass next time. */
    static int backOff(int spins) {
        if (spins < SPINS) {
            Thread.onSpinWait();
            return spins + 1;
        }
        Thread.yield();
        return 0;
    }

    /**
     * Releases the lock taken by {@link #lock}, after the guarded stores: adding HELD to a word
     * that has it clears it and carries into the version, leaving ENDED as it is.
     */
    final void unlock() {
        LOCK.setRelease(this, (int) LOCK.getOpaque(this) + HELD);
    }

    /**
     * For a reader: the version before it reads the guarded fields, to hand to {@link #validate}
     * after; one with HELD set (a writer holds the lock) means wait and start again.
     */
    final int readVersion() {
        return (int) LOCK.getAcquire(this);
    }

    /** Whether the fields read since {@link #readVersion} returned {@code version} belong together. */
    final boolean validate(int version) {
        VarHandle.loadLoadFence();
        return (version & HELD) == 0 && (int) LOCK.getOpaque(this) == version;
    }

    /**
     * Before the application's release of {@code t} (null: a handle not followed): the token for
     * its exit, the record's serial, or {@link Tracker#CLAIMED_BY_CLEANUP} when cleanup claimed it.
     */
    static long releaseToken(Tracked t) {
        if (t == null) {
            return 0;
        }
        return t.enterRelease() ? t.serial : Tracker.CLAIMED_BY_CLEANUP;
    }

    /**
     * After a failed release whose enter returned {@code token}: the handle is as live as before,
     * and claimable again, if {@code t} is still the record that release began on.
     */
    static void releaseFailed(Tracked t, long token) {
        if (t != null && token != 0 && token != Tracker.CLAIMED_BY_CLEANUP && t.serial == token) {
            t.releaseFailed();
        }
    }

    /** The application's release is about to start; false when the agent has claimed the handle. */
    boolean enterRelease() {
        while (true) {
            int o = owner;
            if (o == AGENT) {
                return false;
            }
            if (OWNER.compareAndSet(this, o, o + 1)) {
                return true;
            }
        }
    }

    /** Whether an application release of the handle has been entered and not failed. */
    final boolean releaseInFlight() {
        return owner > LIVE;
    }

    /** The application's release failed: the handle is as live as before it. */
    void releaseFailed() {
        while (true) {
            int o = owner;
            if (o <= LIVE || OWNER.compareAndSet(this, o, o - 1)) {
                return;
            }
        }
    }

    @Override
    public boolean claimForCleanup() {
        return OWNER.compareAndSet(this, LIVE, AGENT);
    }

    @Override
    public boolean claimedForCleanup() {
        return owner == AGENT;
    }
}
