package dev.ncclguard.track;

import dev.ncclguard.bridge.NativeAccess;
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
     * Set when the record leaves its map (released, or replaced by a new record at the address):
     * a call that found it before the native call then treats it as the map would, as gone.
     */
    volatile boolean ended;

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
