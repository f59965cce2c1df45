package dev.ncclguard.track;

import dev.ncclguard.catalog.NativeFunction;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The tracker's NCCL resources other than communicators (NCCL 2.28 and 2.29): ncclMemAlloc's
 * memory, from its allocation to its ncclMemFree; and what a communicator holds, counted on it
 * ({@link CommResources}): buffer registrations, windows and device communicators. None of these
 * calls is on the hot path.
 */
final class Resources {
    /**
     * sizeof(struct ncclDevComm) of NCCL 2.29.3 (nccl_device/impl/comm__types.h), then of 2.28.3, then
     * the bytes up to and with resourceWindow (at offset 32 in both): what is read of a device
     * communicator's struct, the most the argument holds.
     */
    static final int[] DEVCOMM_STRUCT_BYTES = {200, 88, 40};
    private static final int RESOURCE_WINDOW_OFFSET = 32;

    private final Tracker tracker;
    final LongMap<MemoryRecord> memory = new LongMap<>();
    private final AtomicLong memoryAllocated = new AtomicLong();
    private final AtomicLong memoryFreed = new AtomicLong();

    Resources(Tracker tracker) {
        this.tracker = tracker;
    }

    // --- ncclMemAlloc's memory ---

    void memoryAllocated(NativeFunction fn, CallArgs args, String bridge, NativeAccess access) {
        long h = args.handleOut(fn.handle());
        if (h == 0) {
            return;
        }
        long bytes = args.handle(fn.bytes());
        memoryAllocated.incrementAndGet();
        memory.put(h, new MemoryRecord(h, tracker.nextSerial(), fn.symbol(), bridge, Tracker.threadName(),
                tracker.now(), tracker.sharedStack(), tracker.currentDevice(), access, bytes));
    }

    /** Before an ncclMemFree: the record's serial, or {@link Tracker#CLAIMED_BY_CLEANUP}; 0 for memory not followed. */
    long enterMemoryRelease(long handle) {
        return Tracked.releaseToken(memory.get(handle));
    }

    /** After it: a success ends the record {@code token} names (cudaMalloc's memory has none), a failure leaves it. */
    void memoryReleased(long handle, int status, long token) {
        if (status != 0) {
            Tracked.releaseFailed(memory.get(handle), token);
        } else if (memory.removeIfSerial(handle, token) != null) {
            memoryFreed.incrementAndGet();
        }
    }

    // --- registrations and windows, counted on their communicator ---

    void registered(NativeFunction fn, CallArgs args, boolean window) {
        CommRecord c = tracker.communicator(args.handle(fn.comm()));
        long h = args.handleOut(fn.handle());
        if (c != null && h != 0) {
            c.resources().registered(window, h, args.handle(fn.bytes()));
        }
    }

    void deregistered(NativeFunction fn, CallArgs args, boolean window) {
        CommRecord c = tracker.communicator(args.handle(fn.comm()));
        CommResources held = c == null ? null : c.resourcesOrNull();
        if (held != null) {
            held.deregistered(window, args.handle(fn.handle()));
        }
    }

    // --- device communicators ---

    void devCommCreated(NativeFunction fn, CallArgs args, String bridge, NativeAccess access) {
        CommRecord c = tracker.communicator(args.handle(fn.comm()));
        byte[] struct = devCommStruct(args, fn.handle());
        if (c == null || struct == null) {
            return;
        }
        DevCommRecord d = new DevCommRecord(resourceWindow(struct), tracker.nextSerial(), fn.symbol(), bridge,
                Tracker.threadName(), tracker.now(), tracker.stack(), c.device, access, c, littleEndianInt(struct, 0),
                littleEndianInt(struct, 4), struct.length >= DEVCOMM_STRUCT_BYTES[1] ? struct : null);
        c.resources().devCommCreated(d);
    }

    /** Before an ncclDevCommDestroy: the serial of the device communicator its struct names, or {@link Tracker#CLAIMED_BY_CLEANUP}. */
    long enterDevCommRelease(NativeFunction fn, CallArgs args) {
        return Tracked.releaseToken(devComm(fn, args));
    }

    void devCommReleased(NativeFunction fn, CallArgs args, int status, long token) {
        DevCommRecord d = devComm(fn, args);
        if (status != 0) {
            Tracked.releaseFailed(d, token);
        } else if (d != null) {
            CommResources held = d.comm.resourcesOrNull();
            if (held != null) {
                held.devCommReleased(d.handle, token);
            }
        }
    }

    private DevCommRecord devComm(NativeFunction fn, CallArgs args) {
        CommRecord c = tracker.communicator(args.handle(fn.comm()));
        CommResources held = c == null ? null : c.resourcesOrNull();
        byte[] struct = held == null ? null : args.bytes(fn.handle(), DEVCOMM_STRUCT_BYTES[2]);
        return struct == null ? null : held.devComm(resourceWindow(struct));
    }

    /** As many bytes of the struct as the argument holds, of the sizes NCCL's versions have; null if none. */
    private static byte[] devCommStruct(CallArgs args, int index) {
        for (int size : DEVCOMM_STRUCT_BYTES) {
            byte[] b = args.bytes(index, size);
            if (b != null && b.length >= size) {
                return b;
            }
        }
        return null;
    }

    private static long resourceWindow(byte[] struct) {
        long v = 0;
        for (int i = 7; i >= 0; i--) {
            v = (v << 8) | (struct[RESOURCE_WINDOW_OFFSET + i] & 0xffL);
        }
        return v;
    }

    private static int littleEndianInt(byte[] b, int at) {
        return (b[at] & 0xff) | (b[at + 1] & 0xff) << 8 | (b[at + 2] & 0xff) << 16 | (b[at + 3] & 0xff) << 24;
    }

    // --- what a snapshot and the live view read ---

    /** Every live device communicator, of live communicators only. */
    static List<DevCommRecord> devComms(List<CommRecord> comms) {
        List<DevCommRecord> out = new ArrayList<>();
        for (CommRecord c : comms) {
            CommResources held = c.resourcesOrNull();
            if (held != null) {
                held.devCommsTo(out);
            }
        }
        return out;
    }

    long memoryAllocatedCount() {
        return memoryAllocated.get();
    }

    long memoryFreedCount() {
        return memoryFreed.get();
    }
}
