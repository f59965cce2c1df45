package dev.ncclguard.cli;

import java.time.Duration;
import java.time.Instant;
import java.util.List;

/**
 * The merge as one self-contained HTML page: inline CSS and SVG, no script, no network, so it
 * opens from disk or a CI artifact store. Per communicator, one timeline row per rank from its
 * creation to its release (green) or to its process's exit (red: leaked), and a table.
 */
final class HtmlTimeline {
    static final String RELEASED_COLOR = "#2e7d32";
    static final String LEAKED_COLOR = "#d32f2f";
    private static final int GUTTER = 230;
    private static final int CHART = 720;
    private static final int ROW = 28;
    private static final int AXIS = 24;

    private HtmlTimeline() {
    }

    static String page(Job job, List<ReportInputs.Failure> failures) {
        Instant t0 = job.start();
        Instant t1 = job.end();
        long leaked = job.communicators().stream().filter(c -> !c.leaked().isEmpty()).count();
        StringBuilder h = new StringBuilder(8192);
        h.append("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
                .append("<title>ncclguard: communicators of ").append(job.reports().size())
                .append(job.reports().size() == 1 ? " report" : " reports").append("</title>\n")
                .append("<style>\n")
                .append("body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;background:#fff}\n")
                .append("h1{font-size:20px;margin:0 0 8px}h2{font-size:16px;margin:0 0 6px}\n")
                .append(".summary{font-weight:600}.summary.leaked{color:").append(LEAKED_COLOR).append("}\n")
                .append(".summary.clean{color:").append(RELEASED_COLOR).append("}\n")
                .append("section.comm{border-left:6px solid ").append(RELEASED_COLOR)
                .append(";padding:8px 12px;margin:16px 0;background:#f5faf5}\n")
                .append("section.comm.leaked{border-left-color:").append(LEAKED_COLOR).append(";background:#fdecea}\n")
                .append(".verdict{font-weight:400}.leaked .verdict{color:").append(LEAKED_COLOR).append(";font-weight:700}\n")
                .append("svg text{font:12px system-ui,sans-serif;fill:#222}svg .tick{stroke:#bbb}\n")
                .append("svg .exit{stroke:#555;stroke-width:2;stroke-dasharray:3 2}\n")
                .append("rect.released{fill:").append(RELEASED_COLOR).append("}rect.leaked{fill:").append(LEAKED_COLOR)
                .append("}\nsvg text.leak-label{fill:").append(LEAKED_COLOR).append(";font-weight:700}\n")
                .append("table{border-collapse:collapse;margin-top:6px}td,th{border:1px solid #ccc;padding:2px 6px;white-space:nowrap;")
                .append("text-align:left;font-size:12px}tr.leaked td{color:").append(LEAKED_COLOR).append("}\n")
                .append(".legend span{display:inline-block;width:14px;height:10px;margin:0 4px 0 12px}\n")
                .append("td.frame{white-space:normal;word-break:break-all;min-width:200px}\n")
                .append("code{font-size:12px}.bad{color:").append(LEAKED_COLOR).append("}\n")
                .append("</style>\n</head>\n<body>\n");
        h.append("<h1>ncclguard merge</h1>\n");
        h.append("<p id=\"summary\" class=\"summary ").append(leaked > 0 || !failures.isEmpty() ? "leaked" : "clean")
                .append("\">");
        if (leaked == 0) {
            h.append("Every communicator released by every rank (")
                    .append(esc(Words.count(job.communicators().size(), "communicator", "communicators"))).append(")");
        } else {
            h.append(leaked).append(" of ").append(job.communicators().size())
                    .append(" communicators not released by every rank");
        }
        if (!failures.isEmpty()) {
            h.append("; ").append(failures.size()).append(failures.size() == 1 ? " report" : " reports")
                    .append(" unreadable");
        }
        h.append(".</p>\n");
        h.append("<p>Time 0 is ").append(esc(t0.toString())).append(" (the earliest agent start); the last report was ")
                .append("written at ").append(esc(Words.offset(t0, t1)))
                .append(". Each communicator's timeline runs from its creation to its processes' exit.</p>\n");
        h.append("<ul id=\"reports\">\n");
        for (ReportFile r : job.reports()) {
            h.append("<li data-pid=\"").append(r.pid()).append("\"><code>").append(esc(r.path().toString()))
                    .append("</code>: ").append(esc(r.process())).append(", agent ").append(esc(r.agentVersion()))
                    .append(", ").append(esc(r.action())).append(", exit ").append(esc(Words.offset(t0, r.writtenAt())))
                    .append("</li>\n");
        }
        for (ReportInputs.Failure f : failures) {
            h.append("<li class=\"bad\"><code>").append(esc(f.name())).append("</code>: ").append(esc(f.why()))
                    .append("</li>\n");
        }
        h.append("</ul>\n");
        for (String note : job.notes()) {
            h.append("<p class=\"note\">").append(esc(note)).append("</p>\n");
        }
        h.append("<p class=\"legend\">Legend:<span style=\"background:").append(RELEASED_COLOR)
                .append("\"></span>alive, then released by the application<span style=\"background:")
                .append(LEAKED_COLOR).append("\"></span>never released: alive until its process exited (leaked)")
                .append("<span style=\"border-left:2px dashed #555;height:14px\"></span>its process's exit</p>\n");
        for (Job.Communicator c : job.communicators()) {
            communicator(h, c, t0);
        }
        others(h, job);
        h.append("</body>\n</html>\n");
        return h.toString();
    }

    /**
     * Each communicator on its own time window, from its first creation to its processes' last exit:
     * a communicator that lived milliseconds in a job of minutes still shows its ends.
     */
    private static void communicator(StringBuilder h, Job.Communicator c, Instant t0) {
        Instant from = c.createdAt();
        Instant to = c.parts().stream().map(p -> p.end().isAfter(p.report().writtenAt()) ? p.end() : p.report().writtenAt())
                .max(Instant::compareTo).orElse(from);
        long span = Math.max(1, Duration.between(from, to).toMillis());
        boolean leaked = !c.leaked().isEmpty();
        h.append("<section class=\"comm").append(leaked ? " leaked" : "").append("\" data-comm-id=\"")
                .append(esc(c.name())).append("\" data-state=\"").append(leaked ? "leaked" : "released").append("\">\n");
        h.append("<h2>communicator <code>").append(esc(c.name())).append("</code> ").append(esc(c.api()))
                .append(c.nranks() != null ? ", " + c.nranks() + " ranks" : "").append(": <span class=\"verdict\">");
        if (!leaked) {
            h.append("released by every rank");
        } else if (c.released().isEmpty()) {
            h.append("no rank released it");
        } else {
            h.append("rank ").append(esc(Job.ranks(c.leaked()))).append(" never released it: the exit-time NCCL ")
                    .append("warnings of rank ").append(esc(Job.ranks(c.released()))).append(" come from it");
        }
        if (!c.missing().isEmpty()) {
            h.append("; no report for rank");
            c.missing().forEach(r -> h.append(' ').append(r));
        }
        h.append("</span></h2>\n");
        int height = AXIS + ROW * c.parts().size() + 6;
        int width = GUTTER + CHART + 90;
        h.append("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"").append(width).append("\" height=\"")
                .append(height).append("\" viewBox=\"0 0 ").append(width).append(' ').append(height)
                .append("\" role=\"img\">\n");
        for (int i = 0; i <= 4; i++) {
            int x = GUTTER + CHART * i / 4;
            h.append("<line class=\"tick\" x1=\"").append(x).append("\" y1=\"").append(AXIS - 6).append("\" x2=\"")
                    .append(x).append("\" y2=\"").append(height).append("\"/>")
                    .append("<text x=\"").append(x).append("\" y=\"").append(AXIS - 10)
                    .append("\" text-anchor=\"middle\">")
                    .append(esc(Words.offset(t0, from.plusMillis(span * i / 4)))).append("</text>\n");
        }
        int y = AXIS;
        for (Job.Part p : c.parts()) {
            ReportFile.CommEntry e = p.comm();
            int x0 = x(from, e.createdAt(), span);
            int x1 = Math.max(x0 + 2, x(from, p.end(), span));
            String state = p.leaked() ? "leaked" : "released";
            h.append("<g class=\"rank-row\" data-rank=\"").append(e.rank() != null ? e.rank() : "?")
                    .append("\" data-pid=\"").append(p.report().pid()).append("\" data-state=\"").append(state)
                    .append("\">\n");
            h.append("<text x=\"4\" y=\"").append(y + 17).append("\">")
                    .append(esc((e.rank() != null ? "rank " + e.rank() : "rank ?") + " · " + p.report().process()))
                    .append("</text>\n");
            h.append("<rect class=\"bar ").append(state).append("\" x=\"").append(x0).append("\" y=\"").append(y + 5)
                    .append("\" width=\"").append(x1 - x0).append("\" height=\"").append(ROW - 10).append("\"><title>")
                    .append(esc(tooltip(p, t0))).append("</title></rect>\n");
            int exit = x(from, p.report().writtenAt(), span);
            h.append("<line class=\"exit\" x1=\"").append(exit).append("\" y1=\"").append(y + 2).append("\" x2=\"")
                    .append(exit).append("\" y2=\"").append(y + ROW - 2).append("\"/>\n");
            if (p.leaked()) {
                h.append("<text class=\"leak-label\" x=\"").append(exit + 6).append("\" y=\"").append(y + 17)
                        .append("\">").append(e.suppressed() ? "LEAKED (suppressed)" : "LEAKED").append("</text>\n");
            }
            h.append("</g>\n");
            y += ROW;
        }
        h.append("</svg>\n");
        h.append("<table>\n<tr><th>rank</th><th>process</th><th>device</th><th>handle</th><th>created</th>")
                .append("<th>ended</th><th>how</th><th>created at</th></tr>\n");
        for (Job.Part p : c.parts()) {
            ReportFile.CommEntry e = p.comm();
            h.append("<tr class=\"").append(p.leaked() ? "leaked" : "released").append("\"><td>")
                    .append(e.rank() != null ? e.rank() : "?").append("</td><td>").append(esc(p.report().process()))
                    .append("</td><td>").append(e.device() != null ? e.device() : "").append("</td><td><code>")
                    .append(esc(e.handle())).append("</code></td><td>").append(esc(Words.offset(t0, e.createdAt())))
                    .append("</td><td>").append(esc(Words.offset(t0, p.end()))).append("</td><td>")
                    .append(esc(how(p))).append("</td><td class=\"frame\"><code>")
                    .append(p.leak() != null && p.leak().topFrame() != null ? esc(p.leak().topFrame()) : "")
                    .append("</code></td></tr>\n");
        }
        h.append("</table>\n</section>\n");
    }

    private static void others(StringBuilder h, Job job) {
        StringBuilder rows = new StringBuilder();
        for (ReportFile r : job.reports()) {
            for (ReportFile.LeakEntry l : r.leaks()) {
                if (!l.kind().equals("comm")) {
                    rows.append("<tr class=\"leaked\" data-kind=\"").append(esc(l.kind())).append("\"><td>")
                            .append(esc(r.process())).append("</td><td>").append(esc(Words.title(l.kind())))
                            .append("</td><td><code>").append(esc(l.handle())).append("</code></td><td>")
                            .append(esc(Words.details(l.details()))).append("</td><td class=\"frame\"><code>")
                            .append(l.topFrame() != null ? esc(l.topFrame()) : "").append("</code></td></tr>\n");
                }
            }
        }
        if (rows.length() > 0) {
            h.append("<section class=\"others\">\n<h2>Events and streams left behind</h2>\n<table>\n")
                    .append("<tr><th>process</th><th>what</th><th>handle</th><th>details</th><th>created at</th></tr>\n")
                    .append(rows).append("</table>\n</section>\n");
        }
    }

    private static String how(Job.Part p) {
        ReportFile.CommEntry e = p.comm();
        if (!p.leaked()) {
            return "released by " + e.releasedBy();
        }
        String how = e.suppressed() ? "leaked (suppressed)" : "leaked: never destroyed or aborted";
        return e.cleanup() != null && !e.cleanup().equals("none") ? how + "; cleanup " + e.cleanup() : how;
    }

    private static String tooltip(Job.Part p, Instant t0) {
        ReportFile.CommEntry e = p.comm();
        return (e.rank() != null ? "rank " + e.rank() : "rank ?") + ", " + p.report().process() + ", "
                + e.handle() + ": created " + Words.offset(t0, e.createdAt()) + ", "
                + (p.leaked() ? "never released (alive at exit " + Words.offset(t0, p.end()) + ")"
                        : "released " + Words.offset(t0, p.end()) + " by " + e.releasedBy());
    }

    private static int x(Instant t0, Instant at, long span) {
        long ms = Math.max(0, Math.min(span, Duration.between(t0, at).toMillis()));
        return GUTTER + (int) (CHART * ms / span);
    }

    /** Text and attribute values: every character that HTML gives a meaning escaped. */
    static String esc(String text) {
        if (text == null) {
            return "";
        }
        StringBuilder out = new StringBuilder(text.length() + 16);
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            switch (c) {
                case '&' -> out.append("&amp;");
                case '<' -> out.append("&lt;");
                case '>' -> out.append("&gt;");
                case '"' -> out.append("&quot;");
                case '\'' -> out.append("&#39;");
                default -> out.append(c < 0x20 && c != '\t' ? ' ' : c);
            }
        }
        return out.toString();
    }
}
