package dev.ncclguard.report;

import dev.ncclguard.catalog.DetailKeys;
import dev.ncclguard.catalog.Kind;
import dev.ncclguard.cleanup.Outcome;
import dev.ncclguard.json.IsoTime;
import dev.ncclguard.json.ReportSchema;
import dev.ncclguard.log.Log;
import dev.ncclguard.log.OneLine;
import dev.ncclguard.track.NativeOrigin;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The human-readable report, after LeakSanitizer and Netty's ResourceLeakDetector: per leak what
 * leaked, where it was created and what to do, then exactly one line starting with
 * {@code SUMMARY: ncclguard:}. A clean run prints only that line.
 *
 * <p>Leaks alike (same kind, api, bridge, creating stack, state and cleanup) are one block, as
 * LeakSanitizer groups leaks by stack ({@link LeakGroups}): the first in full, a few more by
 * handle, then a count; the JSON report lists every one, so a leaked loop is a few lines (sizes:
 * docs/performance.md, "Sizes the code is shaped by"). At most {@link #MAX_GROUPS} blocks are printed.
 */
public final class TextReportWriter {
    public static final String SUMMARY_PREFIX = "SUMMARY: ncclguard: ";
    /** Blocks printed; the rest are counted in one line. */
    static final int MAX_GROUPS = 50;
    /** Leaks of a block listed by handle after its first. */
    static final int MORE_LISTED = 5;

    private TextReportWriter() {
    }

    public static byte[] toBytes(Report report) {
        return toText(report).getBytes(StandardCharsets.UTF_8);
    }

    public static String toText(Report report) {
        StringBuilder out = new StringBuilder();
        if (report.hasLeaks()) {
            int n = report.leaks().size();
            if (report.live()) {
                out.append("ncclguard: ").append(n).append(n == 1 ? " handle" : " handles")
                        .append(" not released yet, each a leak if the JVM exited now (live, pid ");
            } else {
                out.append("ncclguard: ").append(n).append(n == 1 ? " leaked handle" : " leaked handles")
                        .append(" at exit (pid ");
            }
            out.append(report.pid()).append(" on ").append(OneLine.of(report.host()))
                    .append(", action=").append(report.action()).append(")\n\n");
            blocks(out, report.leaks(), Report.ACTION_CLEANUP.equals(report.action()) && !report.live(), true);
        }
        if (!report.suppressed().isEmpty()) {
            out.append("Suppressed (listed, not counted):\n");
            suppressed(out, report.suppressed());
            out.append('\n');
        }
        if (!report.suppressedCallers().isEmpty()) {
            out.append("ncclguard: NCCL and CUDA calls made by ").append(OneLine.of(String.join(", ",
                    report.suppressedCallers()))).append(" are not tracked (suppressed: library)\n");
        }
        if (report.attachedAt() != null) {
            out.append(trackingSince(report)).append('\n');
            if (report.beforeAttach() != null) {
                out.append("ncclguard: ").append(OneLine.of(report.beforeAttach().note())).append('\n');
            }
        }
        return out.append(summary(report)).append('\n').toString();
    }

    /** Where each kind of leak is explained: docs/leaks.md, an anchor per kind ({@link #docsLink}). */
    public static final String DOCS = "https://ncclguard.dev/docs/leaks.md";
    /** The loggers of text=log: a leak block under its kind's, what cleanup did under CLEANUP_LOGGER. */
    public static final String LEAK_LOGGER = "dev.ncclguard.leak";
    public static final String CLEANUP_LOGGER = "dev.ncclguard.cleanup";

    /** The docs page that explains a kind of leak: its title as a heading, so its anchor. */
    public static String docsLink(Kind kind) {
        return DOCS + "#" + kind.heading().toLowerCase(java.util.Locale.ROOT).replace(' ', '-');
    }

    /** The logger of a kind's leak blocks: dev.ncclguard.leak.communicator, .event, .stream, .devcomm, .memory. */
    public static String leakLogger(Kind kind) {
        return LEAK_LOGGER + "." + switch (kind) {
            case COMM -> "communicator";
            case EVENT -> "event";
            case STREAM -> "stream";
            case DEVCOMM -> "devcomm";
            case MEMORY -> "memory";
        };
    }

    /**
     * The report for the application's logging (text=log): each block of leaks alike one WARN
     * message under its kind's logger, its first line in the shape of Netty's {@code LEAK:} lines
     * (what was not called, on what, where it is explained), then where it was created and what to
     * do; what cleanup did, one line per block under {@link #CLEANUP_LOGGER} (WARN when it failed or
     * timed out); the summary last, under {@link #LEAK_LOGGER}, WARN when anything leaked.
     */
    public static List<Log.Entry> logEntries(Report report) {
        List<Log.Entry> out = new ArrayList<>();
        boolean cleanup = Report.ACTION_CLEANUP.equals(report.action()) && !report.live();
        int shown = 0;
        long hiddenLeaks = 0;
        Collection<LeakGroups.Group<Leak>> groups = groups(report.leaks());
        for (LeakGroups.Group<Leak> g : groups) {
            if (shown == MAX_GROUPS) {
                hiddenLeaks += g.count();
                continue;
            }
            shown++;
            StringBuilder block = new StringBuilder();
            leakLine(block, g.first());
            created(block, g.first(), "\tat ");
            block.append("What to do: ").append(g.first().kind().advice());
            if (g.count() > 1) {
                block.append('\n');
                more(block, g);
                block.setLength(block.length() - 1);
            }
            out.add(new Log.Entry(leakLogger(g.first().kind()), true, block.toString()));
            if (cleanup) {
                out.add(new Log.Entry(CLEANUP_LOGGER, g.first().cleanup().unsuccessful(), cleanupLine(g)));
            }
        }
        if (hiddenLeaks > 0) {
            out.add(new Log.Entry(LEAK_LOGGER, true, count(hiddenLeaks, "more leaked handle", "more leaked handles")
                    + " created at " + count(groups.size() - shown, "other place", "other places")
                    + " or in other states, not logged; the JSON report (option report=) lists every one."));
        }
        if (!report.suppressed().isEmpty()) {
            StringBuilder list = new StringBuilder("Suppressed (listed, not counted):\n");
            suppressed(list, report.suppressed());
            list.setLength(list.length() - 1);
            out.add(new Log.Entry(LEAK_LOGGER + ".suppressed", false, list.toString()));
        }
        if (report.attachedAt() != null) {
            out.add(new Log.Entry(LEAK_LOGGER, false, trackingSince(report).substring("ncclguard: ".length())));
        }
        out.add(new Log.Entry(LEAK_LOGGER, report.hasLeaks(), summary(report)));
        return out;
    }

    /** "LEAK: ncclCommDestroy or ncclCommAbort was not called before the JVM exited: communicator 0x.. (...), ..." */
    private static void leakLine(StringBuilder out, Leak leak) {
        String details = details(leak);
        String what = switch (leak.kind()) {
            case COMM -> "ncclCommDestroy or ncclCommAbort was not called before the JVM exited: communicator ";
            case EVENT -> "the last record of an event was never seen complete (cudaEventSynchronize or a successful"
                    + " cudaEventQuery) before the JVM exited: event ";
            case STREAM -> "work was enqueued after the last synchronization of a stream (cudaStreamSynchronize)"
                    + " before the JVM exited: stream ";
            case DEVCOMM -> "ncclDevCommDestroy was not called before the JVM exited: device communicator ";
            case MEMORY -> "ncclMemFree was not called before the JVM exited: NCCL memory ";
        };
        out.append("LEAK: ").append(what).append(leak.handle());
        if (!details.isEmpty()) {
            out.append(" (").append(details).append(')');
        }
        Object pending = leak.stillPending();
        if (Boolean.TRUE.equals(pending)) {
            out.append(", still pending at exit");
        } else if (Boolean.FALSE.equals(pending)) {
            out.append(", its work had completed by exit");
        }
        out.append(", created by ").append(OneLine.of(leak.api())).append(". See ").append(docsLink(leak.kind()))
                .append(" for more information.\n");
    }

    /** What cleanup did to a block's leaks, one line. */
    private static String cleanupLine(LeakGroups.Group<Leak> g) {
        Leak leak = g.first();
        StringBuilder out = new StringBuilder(leak.kind().title().toLowerCase(java.util.Locale.ROOT));
        out.append(' ').append(leak.handle());
        if (g.count() > 1) {
            out.append(" and ").append(g.count() - 1).append(" more like it");
        }
        out.append(": ").append(cleanupDone(leak));
        if (leak.cleanupNote() != null) {
            out.append(": ").append(OneLine.of(leak.cleanupNote()));
        }
        return out.append('.').toString();
    }

    /** The line that says what the report cannot know: the handles made before the attach. */
    public static String trackingSince(Report report) {
        return "ncclguard: tracking since " + JsonReportWriter.iso(report.attachedAt())
                + ", when it was attached to the running JVM; handles created before then are unknown to it";
    }

    /**
     * The leaks as the exit report prints them (what, where created, what to do; leaks alike in
     * one block), without header or summary.
     */
    public static String leakBlocks(List<Leak> leaks) {
        StringBuilder out = new StringBuilder();
        blocks(out, leaks, false, false);
        return out.toString();
    }

    /** Leaks alike grouped (LeakGroups), in the order of each group's first leak; every group kept. */
    private static Collection<LeakGroups.Group<Leak>> groups(List<Leak> leaks) {
        LeakGroups<Leak> groups = new LeakGroups<>(Integer.MAX_VALUE, MORE_LISTED);
        for (Leak leak : leaks) {
            groups.add(leak);
        }
        return groups.groups();
    }

    /** Suppressed leaks alike as one line: the first, and how many. */
    private static final class Line {
        final Leak first;
        int count = 1;

        Line(Leak first) {
            this.first = first;
        }
    }

    /** @param trailingBlank a blank line after each block (the exit report) rather than between them */
    private static void blocks(StringBuilder out, List<Leak> leaks, boolean cleanup, boolean trailingBlank) {
        int shown = 0;
        long hiddenLeaks = 0;
        Collection<LeakGroups.Group<Leak>> groups = groups(leaks);
        for (LeakGroups.Group<Leak> g : groups) {
            if (shown == MAX_GROUPS) {
                hiddenLeaks += g.count();
                continue;
            }
            if (shown > 0 && !trailingBlank) {
                out.append('\n');
            }
            shown++;
            leak(out, g.first(), cleanup);
            if (g.count() > 1) {
                more(out, g);
            }
            if (trailingBlank) {
                out.append('\n');
            }
        }
        if (hiddenLeaks > 0) {
            if (!trailingBlank) {
                out.append('\n');
            }
            out.append("ncclguard: ").append(count(hiddenLeaks, "more leaked handle", "more leaked handles"))
                    .append(" created at ").append(count(groups.size() - shown, "other place", "other places"))
                    .append(" or in other states, not shown; the JSON report (option report=) lists every one.\n");
            if (trailingBlank) {
                out.append('\n');
            }
        }
    }

    /** The rest of a block's leaks: a few by handle, then how many more. */
    private static void more(StringBuilder out, LeakGroups.Group<Leak> g) {
        long more = g.count() - 1;
        out.append("  And ").append(more).append(" more ").append(g.first().kind().plural(more))
                .append(" like it (same api, creating stack and state):\n");
        for (Leak leak : g.listed()) {
            String details = details(leak);
            out.append("    ").append(leak.handle());
            if (!details.isEmpty()) {
                out.append(" (").append(details).append(')');
            }
            out.append(", thread \"").append(OneLine.of(leak.thread())).append("\" at ")
                    .append(IsoTime.format(leak.createdAtMillis())).append('\n');
        }
        long rest = more - g.listed().size();
        if (rest > 0) {
            out.append("    ... ").append(rest).append(" more; the JSON report (option report=) lists every one.\n");
        }
    }

    /** One line per suppressed leak, leaks alike (same kind, api, first frame and rule) as one line with a count. */
    private static void suppressed(StringBuilder out, List<Report.Suppressed> suppressed) {
        Map<List<Object>, Line> lines = new LinkedHashMap<>();
        for (Report.Suppressed s : suppressed) {
            Leak leak = s.leak();
            List<Object> line = Arrays.asList(leak.kind(), leak.api(), topFrame(leak), s.rule());
            Line g = lines.get(line);
            if (g == null) {
                lines.put(line, new Line(leak));
            } else {
                g.count++;
            }
        }
        int shown = 0;
        for (Map.Entry<List<Object>, Line> entry : lines.entrySet()) {
            if (shown++ == MAX_GROUPS) {
                out.append("  ... ").append(lines.size() - MAX_GROUPS)
                        .append(" more lines; the JSON report (option report=) lists every one.\n");
                break;
            }
            Leak leak = entry.getValue().first;
            String details = details(leak);
            out.append("  ").append(leak.kind().heading()).append(' ').append(leak.handle());
            if (!details.isEmpty()) {
                out.append(" (").append(details).append(')');
            }
            if (topFrame(leak) != null) {
                out.append(" at ").append(OneLine.of(topFrame(leak)));
            }
            out.append(": suppressed by '").append(OneLine.of((String) entry.getKey().get(3))).append('\'');
            int more = entry.getValue().count - 1;
            if (more > 0) {
                out.append(", and ").append(more).append(" more like it");
            }
            out.append('\n');
        }
    }

    private static String topFrame(Leak leak) {
        return leak.stack().isEmpty() ? null : leak.stack().get(0);
    }

    private static void leak(StringBuilder out, Leak leak, boolean cleanup) {
        String details = details(leak);
        boolean noHandle = leak.note() != null && leak.view().handle() == 0;
        out.append(leak.kind().heading()).append(' ').append(noHandle ? "(no handle)" : leak.handle());
        if (!details.isEmpty()) {
            out.append(" (").append(details).append(')');
        }
        String defaultStream = leak.defaultStream();
        if (defaultStream != null) {
            // no call created it: the call named is the first that used it
            out.append(": work on the ").append(defaultStream).append(" default stream");
            if (leak.view().device() >= 0) {
                out.append(" of device ").append(leak.view().device());
            }
            out.append(" not synchronized, first used by ").append(OneLine.of(leak.api())).append(", ")
                    .append(state(leak)).append('\n');
        } else {
            out.append(": created by ").append(noHandle ? "an init only NCCL's profiler plugin saw" : OneLine.of(leak.api()))
                    .append(", ").append(state(leak)).append('\n');
        }
        out.append("  ");
        created(out, leak, "    at ");
        if (leak.note() != null) {
            out.append("  ").append(OneLine.of(leak.note())).append(".\n");
        }
        out.append("  What to do: ").append(leak.kind().advice()).append('\n');
        if (cleanup) {
            out.append("  Cleanup: ").append(cleanupDone(leak));
            if (leak.cleanupNote() != null) {
                out.append(": ").append(OneLine.of(leak.cleanupNote()));
            }
            out.append(".\n");
        }
    }

    /** "Created on thread ... through ...:" and the creating stack, each frame after {@code at}. */
    private static void created(StringBuilder out, Leak leak, String at) {
        String indent = at.substring(0, at.length() - "at ".length());
        boolean noHandle = leak.note() != null && leak.view().handle() == 0;
        out.append(leak.defaultStream() != null ? "First used on thread \"" : "Created on thread \"").append(OneLine.of(leak.thread())).append("\" at ")
                .append(IsoTime.format(leak.createdAtMillis())).append(" through ").append(OneLine.of(leak.bridge()));
        NativeOrigin origin = leak.origin();
        if (origin != null && origin.callerLibrary() != null) {
            out.append(", called from ").append(OneLine.of(origin.callerLibrary()));
            if (origin.callerSymbol() != null) {
                out.append(" (").append(OneLine.of(origin.callerSymbol())).append(')');
            }
        }
        out.append(":\n");
        boolean nativeFrames = origin != null && !origin.nativeStack().isEmpty();
        if (leak.stack().isEmpty() && nativeFrames) {
            out.append(indent).append("(no Java frames: a thread of native code; its native stack:)\n");
            for (String frame : origin.nativeStack()) {
                out.append(at).append(OneLine.of(frame)).append('\n');
            }
        } else if (leak.stack().isEmpty()) {
            out.append(indent).append(origin != null || noHandle ? "(no Java stack: a thread with no Java frames, or stacks=off)\n"
                    : "(no stack recorded; run with stacks=on to see where it was created)\n");
        }
        for (String frame : leak.stack()) {
            out.append(frame.startsWith("... ") ? indent : at).append(OneLine.of(frame)).append('\n');
        }
    }

    private static String state(Leak leak) {
        Object pending = leak.stillPending();
        String atExit = Boolean.TRUE.equals(pending) ? "; still pending at exit"
                : Boolean.FALSE.equals(pending) ? "; its work had completed by exit" : "";
        return switch (leak.kind()) {
            case COMM -> Boolean.TRUE.equals(leak.details().get(DetailKeys.REVOKED))
                    ? "revoked (ncclCommRevoke) and never destroyed or aborted" : "never destroyed or aborted";
            case EVENT -> "recorded and never seen complete" + atExit;
            case STREAM -> "work enqueued after its last synchronization" + atExit;
            case DEVCOMM -> "never destroyed, its communicator alive";
            case MEMORY -> "never freed";
        };
    }

    /** The report's cleanup word and what it means, as check says it too (Outcome.describe). */
    private static String cleanupDone(Leak leak) {
        return leak.cleanup().describe(leak.kind());
    }

    /**
     * rank 0 of 2, device 0, commId 9f3c…; recorded on stream 0x…; 4 pending operations; revoked;
     * 1048576 bytes; registrations and windows; then any other field.
     */
    private static String details(Leak leak) {
        Map<String, Object> rest = new LinkedHashMap<>(leak.details());
        rest.remove(DetailKeys.STILL_PENDING);
        List<String> parts = new ArrayList<>();
        Object rank = rest.remove(DetailKeys.RANK);
        Object nranks = rest.remove(DetailKeys.NRANKS);
        if (rank != null) {
            parts.add("rank " + rank + (nranks != null ? " of " + nranks : ""));
        } else if (nranks != null) {
            parts.add(nranks + " ranks");
        }
        Object device = rest.remove(DetailKeys.DEVICE);
        if (device != null) {
            parts.add("device " + device);
        }
        Object commId = rest.remove(DetailKeys.COMM_ID);
        if (commId != null) {
            parts.add("commId " + OneLine.of(String.valueOf(commId)));
        }
        Object stream = rest.remove(DetailKeys.STREAM);
        if (stream != null) {
            parts.add("recorded on stream " + (stream instanceof Number n ? "0x" + Long.toHexString(n.longValue())
                    : OneLine.of(String.valueOf(stream))));
        }
        Object pendingOps = rest.remove(DetailKeys.PENDING_OPS);
        if (pendingOps != null) {
            parts.add(pendingOps + (pendingOps instanceof Number n && n.longValue() == 1
                    ? " pending operation" : " pending operations"));
        }
        if (Boolean.TRUE.equals(rest.remove(DetailKeys.FINALIZED))) {
            parts.add("finalized");
        }
        Object nodes = rest.remove(DetailKeys.NNODES);
        if (nodes != null) {
            parts.add(nodes + (nodes instanceof Number n && n.longValue() == 1 ? " node" : " nodes"));
        }
        Object inFlight = rest.remove(DetailKeys.IN_FLIGHT);
        if (inFlight instanceof Map<?, ?> work) {
            parts.add(inFlight(work));
        }
        if (Boolean.TRUE.equals(rest.remove(DetailKeys.REVOKED))) {
            parts.add("revoked");
        }
        Object bytes = rest.remove(DetailKeys.BYTES);
        if (bytes != null) {
            parts.add(bytes + " bytes");
        }
        registry(parts, rest.remove(DetailKeys.REGISTRATIONS), "registration", "registrations");
        registry(parts, rest.remove(DetailKeys.WINDOWS), "window", "windows");
        Object devComms = rest.remove(DetailKeys.DEVICE_COMMUNICATORS);
        if (devComms != null) {
            parts.add(devComms + (devComms instanceof Number n && n.longValue() == 1
                    ? " device communicator" : " device communicators"));
        }
        for (Map.Entry<String, Object> field : rest.entrySet()) {
            parts.add(OneLine.of(field.getKey()) + " " + OneLine.of(String.valueOf(field.getValue())));
        }
        return String.join(", ", parts);
    }

    /** "2 operations in flight, the oldest AllReduce of 1024 ncclFloat32 (4096 bytes), 1532 ms old". */
    private static String inFlight(Map<?, ?> work) {
        Object n = work.get("operations");
        StringBuilder b = new StringBuilder().append(n).append(n instanceof Number c && c.longValue() == 1
                ? " operation in flight" : " operations in flight");
        if (work.get("oldest") instanceof Map<?, ?> oldest) {
            b.append(", the oldest ").append(OneLine.of(String.valueOf(oldest.containsKey("function")
                    ? oldest.get("function") : oldest.get("kind"))));
            b.append(" of ").append(oldest.get("elements"));
            if (oldest.get("datatype") != null) {
                b.append(' ').append(OneLine.of(String.valueOf(oldest.get("datatype"))));
            }
            if (oldest.get("bytes") != null) {
                b.append(" (").append(oldest.get("bytes")).append(" bytes)");
            }
            b.append(", ").append(oldest.get("ageMs")).append(" ms old");
        }
        return b.toString();
    }

    /** "2 of 5 registrations still registered (8192 bytes)", from a communicator's counts. */
    private static void registry(List<String> parts, Object counts, String one, String many) {
        if (!(counts instanceof Map<?, ?> m)) {
            return;
        }
        Object made = m.get(DetailKeys.REGISTERED);
        Object live = m.get(DetailKeys.STILL_REGISTERED);
        long n = made instanceof Number x ? x.longValue() : 0;
        parts.add(live + " of " + n + " " + (n == 1 ? one : many) + " still registered (" + m.get(DetailKeys.BYTES) + " bytes)");
    }

    static String summary(Report report) {
        ReportSchema.Summary s = report.summary();
        String suppressed = s.suppressed() > 0 ? s.suppressed() + " suppressed" : null;
        // an attach sees the JVM only from then on: a clean report of it is no full "no leaks"
        String partial = Partial.of(report);
        String tail = partial == null ? "" : " (" + partial + ")";
        if (!report.hasLeaks()) {
            return SUMMARY_PREFIX + "no leaks (" + count(s.commsCreated(), "communicator", "communicators")
                    + " created, " + s.commsReleased() + " released" + (suppressed != null ? "; " + suppressed : "") + ")"
                    + tail;
        }
        List<String> parts = new ArrayList<>();
        for (Kind kind : Kind.values()) {
            if (s.leaked(kind) > 0) {
                parts.add(kind.count(s.leaked(kind)));
            }
        }
        String line = SUMMARY_PREFIX + String.join(", ", parts);
        if (Report.ACTION_CLEANUP.equals(report.action()) && !report.live()) {
            line += " (cleaned " + s.cleaned() + ", failed " + s.cleanupFailed() + ")";
        }
        if (suppressed != null) {
            line += " (" + suppressed + ")";
        }
        return line + tail;
    }

    private static String count(long n, String one, String many) {
        return n + " " + (n == 1 ? one : many);
    }
}
