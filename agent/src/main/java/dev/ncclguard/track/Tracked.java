package dev.ncclguard.track;

import dev.ncclguard.bridge.NativeAccess;

/**
 * What every tracked handle keeps from its creation. Fields are final and shared (api, bridge and
 * thread name are references to strings that already exist), so a record stays small.
 */
abstract class Tracked {
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
}
