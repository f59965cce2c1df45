package dev.ncclguard.track;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * An event and its last record. Each record gets a number unique in the tracker (from its
 * thread's block, see {@link ThreadState#recordNumber}), so a completion seen by a query or
 * synchronize applies only to the record that was last when the call began.
 *
 * <p>The last record (its number, stream and op number) is written under the record's own lock
 * ({@link Tracked#lock}) and read without it, between two equal versions. A completion takes no
 * lock: it reads the record it completes that way and raises {@link #completedSeq} by a compare
 * and set that fails if another completion moved it in between.
 */
final class EventRecord extends Tracked {
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

    void recorded(StreamRecord on, long op, long seq) {
        lock();
        stream = on;
        opNumber = op;
        LAST_RECORD_SEQ.setOpaque(this, seq);
        unlock();
    }

    /**
     * The record numbered {@code seq} is complete, and with it the ops of its stream up to the
     * record. Does nothing if {@code seq} is no longer the last record.
     */
    void completed(long seq) {
        // polling queries see the same completion again and again: that changes nothing
        if (seq == 0 || seq == completedSeq) {
            return;
        }
        StreamRecord on;
        long op;
        int spins = 0;
        while (true) {
            int version = readVersion();
            long last = (long) LAST_RECORD_SEQ.getOpaque(this);
            on = stream;
            op = opNumber;
            if (validate(version)) {
                if (last != seq) {
                    return;
                }
                break;
            }
            spins = backOff(spins);
        }
        // the stream first: once completedSeq says so, the record's work is marked done
        if (on != null) {
            on.markDone(op);
        }
        while (true) {
            long done = completedSeq;
            // a newer record, or a completion of it, since: this one is not the last any more
            if (done == seq || lastRecordSeq != seq) {
                return;
            }
            if (COMPLETED_SEQ.compareAndSet(this, done, seq)) {
                return;
            }
        }
    }

    /**
     * {@link #NOT_PENDING} unless recorded and its last record never seen complete; else the
     * stream of that record. The record and its completion are read at one instant: the
     * completion number did not change while the record was read.
     */
    Object pendingOn() {
        int spins = 0;
        while (true) {
            long done = completedSeq;
            int version = readVersion();
            long last = (long) LAST_RECORD_SEQ.getOpaque(this);
            StreamRecord on = stream;
            if (validate(version) && completedSeq == done) {
                return last != 0 && done != last ? on : NOT_PENDING;
            }
            spins = backOff(spins);
        }
    }
}
