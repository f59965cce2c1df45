package dev.ncclguard.track;

import dev.ncclguard.bridge.NativeAccess;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * An event and its last record. Each record gets a unique number (its global op sequence number),
 * so a completion seen by a query or synchronize applies only to the record that was last when
 * the call began.
 */
final class EventRecord extends Tracked {
    // Written under this with release stores (the lock orders the writers), and read without the
    // lock too: by enter, and when a completion is seen again.
    private static final VarHandle LAST_RECORD_SEQ;
    private static final VarHandle COMPLETED_SEQ;

    static {
        try {
            MethodHandles.Lookup lookup = MethodHandles.lookup();
            LAST_RECORD_SEQ = lookup.findVarHandle(EventRecord.class, "lastRecordSeq", long.class);
            COMPLETED_SEQ = lookup.findVarHandle(EventRecord.class, "completedSeq", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    static final Object NOT_PENDING = new Object();

    private volatile long lastRecordSeq;
    private volatile long completedSeq;
    private StreamRecord stream;
    private long opNumber;

    EventRecord(long handle, long serial, String api, String bridge, String thread, long createdAtMillis,
            Throwable creation, int device, NativeAccess access) {
        super(handle, serial, api, bridge, thread, createdAtMillis, creation, device, access);
    }

    long lastRecordSeq() {
        return lastRecordSeq;
    }

    synchronized void recorded(StreamRecord on, long op, long seq) {
        stream = on;
        opNumber = op;
        LAST_RECORD_SEQ.setRelease(this, seq);
    }

    /**
     * The record numbered {@code seq} is complete, and with it the ops of its stream up to the
     * record. Does nothing if {@code seq} is no longer the last record. Lock order: event, then
     * stream (nothing takes them the other way round).
     */
    void completed(long seq) {
        // polling queries see the same completion again and again: that changes nothing, so no lock
        if (seq == 0 || seq != lastRecordSeq || seq == completedSeq) {
            return;
        }
        synchronized (this) {
            if (seq != lastRecordSeq) {
                return;
            }
            COMPLETED_SEQ.setRelease(this, seq);
            if (stream != null) {
                stream.markDone(opNumber);
            }
        }
    }

    /**
     * {@link #NOT_PENDING} unless recorded and its last record never seen complete; else the
     * stream of that record. One lock for what a snapshot asks of each of 100,000 events.
     */
    synchronized Object pendingOn() {
        return lastRecordSeq != 0 && completedSeq != lastRecordSeq ? stream : NOT_PENDING;
    }
}
