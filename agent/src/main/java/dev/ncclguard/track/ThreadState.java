package dev.ncclguard.track;

import java.util.Arrays;
import java.util.concurrent.atomic.AtomicLong;

/** What the CUDA runtime and NCCL keep per host thread: the current device and the open group. */
final class ThreadState {
    /** As the thread's last successful cudaSetDevice set it; CUDA's default is 0. */
    int device;
    /** ncclGroupStart nesting; NCCL launches grouped work at the outermost ncclGroupEnd. */
    int groupDepth;
    /** C's token of this thread's device synchronize in progress (a Java bridge's call). */
    long nativeSyncToken;
    /** Event record numbers taken at a time from the global op sequence. */
    static final int RECORD_NUMBERS = 1 << 10;
    /** The next record number of this thread's block, and the end of the block (exclusive). */
    private long nextRecordNumber;
    private long recordNumbersEnd;
    /** The streams of the work called inside the open group, one entry per call. */
    private StreamRecord[] grouped = new StreamRecord[8];
    private int groupedCount;

    /**
     * A number for an event record, unique in the tracker: numbers come in blocks taken from the
     * global sequence, so an event record steps the shared sequence (an atomic instruction) once
     * per {@value #RECORD_NUMBERS} records of a thread. Only equality is asked of them.
     */
    long recordNumber(AtomicLong sequence) {
        if (nextRecordNumber == recordNumbersEnd) {
            nextRecordNumber = sequence.getAndAdd(RECORD_NUMBERS) + 1;
            recordNumbersEnd = nextRecordNumber + RECORD_NUMBERS;
        }
        return nextRecordNumber++;
    }

    void deferToGroupEnd(StreamRecord s) {
        if (groupedCount == grouped.length) {
            grouped = Arrays.copyOf(grouped, grouped.length * 2);
        }
        grouped[groupedCount++] = s;
    }

    int groupedCount() {
        return groupedCount;
    }

    StreamRecord grouped(int i) {
        return grouped[i];
    }

    /** Forgets the grouped work, dropping the references so released streams can be collected. */
    void clearGrouped() {
        Arrays.fill(grouped, 0, groupedCount, null);
        groupedCount = 0;
    }
}
