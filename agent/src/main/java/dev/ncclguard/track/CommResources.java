package dev.ncclguard.track;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * What one communicator holds besides itself: its buffer registrations (ncclCommRegister), its
 * windows (ncclCommWindowRegister) and its device communicators (ncclDevCommCreate); and how many
 * children it had, for their commIds. NCCL frees all
 * of them with the communicator; until then they are counted here, so that the live view shows a
 * service that registers without deregistering, and the exit report a leaked communicator's.
 * Guarded by this object: none of these calls is on the hot path.
 */
final class CommResources {
    /** A registration handle or window, and the calls that hold it. */
    private static final class Held {
        final long bytes;
        int refs = 1;

        Held(long bytes) {
            this.bytes = bytes;
        }
    }

    /** One kind of registration: buffers or windows. */
    private static final class Registry {
        final Map<Long, Held> live = new HashMap<>();
        long registered;
        long stillRegistered;
        long bytes;

        void add(long handle, long size) {
            registered++;
            stillRegistered++;
            // NCCL's register cache hands out the handle of a registered range again for a range inside it
            Held h = live.get(handle);
            if (h != null) {
                h.refs++;
                return;
            }
            long b = Math.max(0, size);
            live.put(handle, new Held(b));
            bytes += b;
        }

        boolean remove(long handle) {
            Held h = live.get(handle);
            if (h == null) {
                return false;
            }
            stillRegistered--;
            if (--h.refs == 0) {
                live.remove(handle);
                bytes -= h.bytes;
            }
            return true;
        }

        long[] counts() {
            return new long[] {registered, stillRegistered, bytes};
        }
    }

    private final Registry registrations = new Registry();
    private final Registry windows = new Registry();
    private final List<DevCommRecord> devComms = new ArrayList<>(2);
    /** Set when the communicator ended: what comes after is NCCL's own cleanup, not counted. */
    private boolean closed;
    /** NCCL's childCount (splits, NCCL_SPLIT_NOCOLOR too, and grows) and the agent's count of shrinks. */
    private int children;
    private int shrinks;

    synchronized int nextChild() {
        return ++children;
    }

    synchronized int nextShrink() {
        return ++shrinks;
    }

    synchronized void registered(boolean window, long handle, long bytes) {
        if (!closed && handle != 0) {
            (window ? windows : registrations).add(handle, bytes);
        }
    }

    synchronized void deregistered(boolean window, long handle) {
        if (!closed) {
            (window ? windows : registrations).remove(handle);
        }
    }

    /** {registered, stillRegistered, bytes still registered} of buffers or windows. */
    synchronized long[] counts(boolean window) {
        return (window ? windows : registrations).counts();
    }

    synchronized boolean any() {
        return registrations.registered > 0 || windows.registered > 0 || !devComms.isEmpty();
    }

    synchronized void devCommCreated(DevCommRecord d) {
        if (!closed) {
            devComms.add(d);
        }
    }

    /** The live device communicator of this resourceWindow (the oldest, for NULL), or null. */
    synchronized DevCommRecord devComm(long window) {
        for (DevCommRecord d : devComms) {
            if (d.handle == window) {
                return d;
            }
        }
        return null;
    }

    /** Ends the device communicator {@code serial} names; false if it is not live here. */
    synchronized boolean devCommReleased(long window, long serial) {
        for (int i = 0; i < devComms.size(); i++) {
            DevCommRecord d = devComms.get(i);
            if (d.handle == window && d.serial == serial) {
                devComms.remove(i);
                d.end();
                return true;
            }
        }
        return false;
    }

    synchronized void devCommsTo(List<DevCommRecord> out) {
        out.addAll(devComms);
    }

    synchronized int liveDevComms() {
        return devComms.size();
    }

    /** The communicator ended: NCCL freed what it held. */
    synchronized void close() {
        closed = true;
        for (DevCommRecord d : devComms) {
            d.end();
        }
        devComms.clear();
        registrations.live.clear();
        windows.live.clear();
    }
}
