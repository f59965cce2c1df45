package dev.ncclguard.report;

import dev.ncclguard.catalog.Kind;
import dev.ncclguard.track.HandleView;
import java.util.LinkedHashMap;
import java.util.Map;

/** HandleViews as the tracker would hand them over, for the report tests. */
final class Views {
    static final long T0 = 1_750_000_000_000L;

    private Views() {
    }

    static Throwable stack(String... frames) {
        Throwable t = new Throwable();
        StackTraceElement[] elements = new StackTraceElement[frames.length];
        for (int i = 0; i < frames.length; i++) {
            String frame = frames[i];
            int dot = frame.lastIndexOf('.');
            elements[i] = new StackTraceElement(frame.substring(0, dot), frame.substring(dot + 1),
                    frame.substring(frame.lastIndexOf('.', dot - 1) + 1, dot) + ".java", 10 + i);
        }
        t.setStackTrace(elements);
        return t;
    }

    static HandleView comm(long handle, int rank, int nranks, int device, String commId, Throwable creation) {
        Map<String, Object> details = new LinkedHashMap<>();
        details.put("rank", rank);
        details.put("nranks", nranks);
        details.put("device", device);
        details.put("commId", commId);
        return new HandleView(Kind.COMM, handle, "ncclCommInitRank", "jna-interface", "main", T0 + handle,
                creation, device, details, null);
    }

    static HandleView event(long handle, long stream, Throwable creation) {
        Map<String, Object> details = new LinkedHashMap<>();
        details.put("stream", "0x" + Long.toHexString(stream));
        details.put("device", 0);
        return new HandleView(Kind.EVENT, handle, "cudaEventCreate", "jna-interface", "worker-1", T0 + handle,
                creation, 0, details, null);
    }

    static HandleView stream(long handle, long pendingOps, Throwable creation) {
        Map<String, Object> details = new LinkedHashMap<>();
        details.put("pendingOps", pendingOps);
        details.put("device", 1);
        return new HandleView(Kind.STREAM, handle, "cudaStreamCreateWithFlags", "jna-direct", "main", T0 + handle,
                creation, 1, details, null);
    }
}
