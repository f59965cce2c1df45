package dev.ncclguard.report;

import dev.ncclguard.cleanup.CleanupOutcome;
import dev.ncclguard.track.Kind;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The human-readable report, after LeakSanitizer and Netty's ResourceLeakDetector: per leak what
 * leaked, where it was created and what to do, then exactly one line starting with
 * {@code SUMMARY: ncclguard:}. A clean run prints only that line.
 */
public final class TextReportWriter {
    public static final String SUMMARY_PREFIX = "SUMMARY: ncclguard: ";

    private TextReportWriter() {
    }

    public static byte[] toBytes(Report report) {
        return toText(report).getBytes(StandardCharsets.UTF_8);
    }

    public static String toText(Report report) {
        StringBuilder out = new StringBuilder();
        if (report.hasLeaks()) {
            int n = report.leaks().size();
            out.append("ncclguard: ").append(n).append(n == 1 ? " leaked handle" : " leaked handles")
                    .append(" at exit (pid ").append(report.pid()).append(" on ").append(printable(report.host()))
                    .append(", action=").append(report.action()).append(")\n\n");
            for (Leak leak : report.leaks()) {
                leak(out, leak, Report.ACTION_CLEANUP.equals(report.action()));
                out.append('\n');
            }
        }
        if (!report.suppressed().isEmpty()) {
            out.append("Suppressed (listed, not counted):\n");
            for (Report.Suppressed s : report.suppressed()) {
                Leak leak = s.leak();
                String details = details(leak);
                out.append("  ").append(title(leak.kind())).append(' ').append(leak.handle());
                if (!details.isEmpty()) {
                    out.append(" (").append(details).append(')');
                }
                if (!leak.stack().isEmpty()) {
                    out.append(" at ").append(printable(leak.stack().get(0)));
                }
                out.append(": suppressed by '").append(printable(s.rule())).append("'\n");
            }
            out.append('\n');
        }
        return out.append(summary(report)).append('\n').toString();
    }

    /** Each leak as the exit report prints it (what, where created, what to do), without header or summary. */
    public static String leakBlocks(List<Leak> leaks) {
        StringBuilder out = new StringBuilder();
        for (Leak leak : leaks) {
            if (out.length() > 0) {
                out.append('\n');
            }
            leak(out, leak, false);
        }
        return out.toString();
    }

    private static void leak(StringBuilder out, Leak leak, boolean cleanup) {
        String details = details(leak);
        out.append(title(leak.kind())).append(' ').append(leak.handle());
        if (!details.isEmpty()) {
            out.append(" (").append(details).append(')');
        }
        out.append(": created by ").append(printable(leak.api())).append(", ").append(state(leak)).append('\n');
        out.append("  Created on thread \"").append(printable(leak.thread())).append("\" at ")
                .append(JsonReportWriter.iso(leak.createdAt())).append(" through ").append(printable(leak.bridge())).append(":\n");
        if (leak.stack().isEmpty()) {
            out.append("    (no stack recorded; run with stacks=on to see where it was created)\n");
        }
        for (String frame : leak.stack()) {
            out.append(frame.startsWith("... ") ? "    " : "    at ").append(printable(frame)).append('\n');
        }
        out.append("  What to do: ").append(advice(leak.kind())).append('\n');
        if (cleanup) {
            out.append("  Cleanup: ").append(cleanupDone(leak));
            if (leak.cleanupNote() != null) {
                out.append(": ").append(printable(leak.cleanupNote()));
            }
            out.append(".\n");
        }
    }

    private static String title(Kind kind) {
        return switch (kind) {
            case COMM -> "Leaked communicator";
            case EVENT -> "Pending event";
            case STREAM -> "Unsynchronized stream";
        };
    }

    private static String state(Leak leak) {
        Object pending = leak.details().get("stillPending");
        String atExit = Boolean.TRUE.equals(pending) ? "; still pending at exit"
                : Boolean.FALSE.equals(pending) ? "; its work had completed by exit" : "";
        return switch (leak.kind()) {
            case COMM -> "never destroyed or aborted";
            case EVENT -> "recorded and never seen complete" + atExit;
            case STREAM -> "work enqueued after its last synchronization" + atExit;
        };
    }

    private static String advice(Kind kind) {
        return switch (kind) {
            case COMM -> "destroy it with ncclCommDestroy before exit, or ncclCommAbort on error paths.";
            case EVENT -> "synchronize it (cudaEventSynchronize) before exit.";
            case STREAM -> "cudaStreamSynchronize it before exit.";
        };
    }

    private static String cleanupDone(Leak leak) {
        CleanupOutcome outcome = leak.cleanup();
        return switch (outcome) {
            case NONE -> "not attempted";
            case SYNCHRONIZED -> leak.kind() == Kind.EVENT
                    ? "its work completed while cleanup waited, then destroyed with cudaEventDestroy"
                    : "its work completed while cleanup waited; the stream is left to the application";
            case DESTROYED -> leak.kind() == Kind.COMM ? "destroyed with ncclCommDestroy"
                    : "destroyed with cudaEventDestroy";
            case ABORTED -> "aborted with ncclCommAbort";
            case TIMED_OUT -> "timed out";
            case FAILED -> "failed";
        };
    }

    /** rank 0 of 2, device 0, commId 9f3c…; recorded on stream 0x…; 4 pending operations; then any other field. */
    private static String details(Leak leak) {
        Map<String, Object> rest = new LinkedHashMap<>(leak.details());
        rest.remove("stillPending");
        List<String> parts = new ArrayList<>();
        Object rank = rest.remove("rank");
        Object nranks = rest.remove("nranks");
        if (rank != null) {
            parts.add("rank " + rank + (nranks != null ? " of " + nranks : ""));
        } else if (nranks != null) {
            parts.add(nranks + " ranks");
        }
        Object device = rest.remove("device");
        if (device != null) {
            parts.add("device " + device);
        }
        Object commId = rest.remove("commId");
        if (commId != null) {
            parts.add("commId " + printable(String.valueOf(commId)));
        }
        Object stream = rest.remove("stream");
        if (stream != null) {
            parts.add("recorded on stream " + (stream instanceof Number n ? "0x" + Long.toHexString(n.longValue())
                    : printable(String.valueOf(stream))));
        }
        Object pendingOps = rest.remove("pendingOps");
        if (pendingOps != null) {
            parts.add(pendingOps + (pendingOps instanceof Number n && n.longValue() == 1
                    ? " pending operation" : " pending operations"));
        }
        if (Boolean.TRUE.equals(rest.remove("finalized"))) {
            parts.add("finalized");
        }
        for (Map.Entry<String, Object> field : rest.entrySet()) {
            parts.add(printable(field.getKey()) + " " + printable(String.valueOf(field.getValue())));
        }
        return String.join(", ", parts);
    }

    static String summary(Report report) {
        Report.Summary s = report.summary();
        String suppressed = s.suppressed() > 0 ? s.suppressed() + " suppressed" : null;
        if (!report.hasLeaks()) {
            return SUMMARY_PREFIX + "no leaks (" + count(s.commsCreated(), "communicator", "communicators")
                    + " created, " + s.commsReleased() + " released" + (suppressed != null ? "; " + suppressed : "") + ")";
        }
        List<String> parts = new ArrayList<>();
        if (s.leakedComms() > 0) {
            parts.add(count(s.leakedComms(), "leaked communicator", "leaked communicators"));
        }
        if (s.pendingEvents() > 0) {
            parts.add(count(s.pendingEvents(), "pending event", "pending events"));
        }
        if (s.unsyncedStreams() > 0) {
            parts.add(count(s.unsyncedStreams(), "unsynchronized stream", "unsynchronized streams"));
        }
        String line = SUMMARY_PREFIX + String.join(", ", parts);
        if (Report.ACTION_CLEANUP.equals(report.action())) {
            line += " (cleaned " + s.cleaned() + ", failed " + s.cleanupFailed() + ")";
        }
        if (suppressed != null) {
            line += " (" + suppressed + ")";
        }
        return line;
    }

    private static String count(long n, String one, String many) {
        return n + " " + (n == 1 ? one : many);
    }

    /**
     * Control characters shown escaped: a thread name or frame holding a line break must not
     * start a line of its own (least of all a second SUMMARY line).
     */
    static String printable(String text) {
        if (text == null) {
            return "?";
        }
        StringBuilder out = null;
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            boolean control = c < 0x20 || c == 0x7f || c == '\u2028' || c == '\u2029' || c == '\u0085';
            if (control && out == null) {
                out = new StringBuilder(text.length() + 8).append(text, 0, i);
            }
            if (out != null) {
                switch (c) {
                    case '\n' -> out.append("\\n");
                    case '\r' -> out.append("\\r");
                    case '\t' -> out.append("\\t");
                    default -> {
                        if (control) {
                            out.append(String.format("\\u%04x", (int) c));
                        } else {
                            out.append(c);
                        }
                    }
                }
            }
        }
        return out == null ? text : out.toString();
    }
}
