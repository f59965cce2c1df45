package dev.ncclguard.track;

import java.util.Arrays;

/** What the CUDA runtime and NCCL keep per host thread: the current device and the open group. */
final class ThreadState {
    /** As the thread's last successful cudaSetDevice set it; CUDA's default is 0. */
    int device;
    /** ncclGroupStart nesting; NCCL launches grouped work at the outermost ncclGroupEnd. */
    int groupDepth;
    /** The streams of the work called inside the open group, one entry per call. */
    private StreamRecord[] grouped = new StreamRecord[8];
    private int groupedCount;

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
