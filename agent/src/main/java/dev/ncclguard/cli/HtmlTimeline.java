package dev.ncclguard.cli;

import java.io.IOException;
import java.io.OutputStream;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * The merge as one self-contained HTML page: inline CSS, no script, nothing fetched, so it opens
 * from disk or a CI artifact store. Built for jobs of many ranks and communicators: an index with
 * anchors; the communicators that need a look (leaked, or naming ranks without a report) first and
 * open, each with a row per rank and the creating stacks on demand; the released ones after,
 * each collapsed in a {@code <details>}. Each communicator has its own time axis, from its first
 * creation to its last end, with round ticks, so a 5-second communicator of a 1-hour job is not
 * one pixel. Bars are plain positioned elements rather than SVG: a row costs some 200 bytes, and
 * 8 ranks x 300 communicators stay well under a megabyte.
 */
final class HtmlTimeline {
    static final String RELEASED_COLOR = "#2e7d32";
    static final String LEAKED_COLOR = "#d32f2f";
    static final String MISSING_COLOR = "#9e9e9e";
    static final String WAIT_COLOR = "#f9a825";
    /** Marks of events and streams: one per hundredth of the axis at most, whatever their number. */
    private static final int MARK_BUCKETS = 100;

    private final Writer h;
    private final Job job;
    private final Instant t0;

    private HtmlTimeline(Writer h, Job job) {
        this.h = h;
        this.job = job;
        this.t0 = job.start();
    }

    static void write(Job job, List<Inputs.Failure> failures, MergeCommand.Verdict verdict, OutputStream sink)
            throws IOException {
        Writer w = new OutputStreamWriter(sink, StandardCharsets.UTF_8);
        new HtmlTimeline(w, job).page(failures, verdict);
        w.flush();
    }

    /** The page as a String, for tests. */
    static String page(Job job, List<Inputs.Failure> failures, MergeCommand.Verdict verdict) throws IOException {
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
        write(job, failures, verdict, out);
        return out.toString(StandardCharsets.UTF_8);
    }

    private void page(List<Inputs.Failure> failures, MergeCommand.Verdict verdict) throws IOException {
        Job.Shown shown = job.shown();
        List<Job.Communicator> attention = shown.attention();
        List<Job.Communicator> released = shown.released();
        h.write("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>ncclguard: ");
        h.write(esc(Words.count(job.communicatorCount(), "communicator", "communicators") + " of "
                + Words.count(job.processes().size(), "report", "reports")));
        h.write("</title>\n<style>\n");
        h.write(css());
        h.write("</style>\n</head>\n<body>\n<h1>ncclguard merge</h1>\n");
        h.write("<p id=\"summary\" class=\"summary " + (verdict.failed() ? "leaked" : "clean") + "\">");
        h.write(esc(summary(verdict)));
        h.write("</p>\n<p>Time 0 is " + esc(t0.toString()) + " (the earliest agent start); the last report was"
                + " written at " + esc(Words.offset(t0, job.end())) + ". Each communicator has its own time axis,"
                + " from its first creation to its last end.</p>\n");
        reports(failures);
        for (String note : job.notes()) {
            h.write("<p class=\"note\">" + esc(note) + "</p>\n");
        }
        legend();
        index(attention, released, shown);
        for (Job.Communicator c : attention) {
            communicator(c, true);
        }
        if (!released.isEmpty()) {
            h.write("<h2 id=\"released\">Released by every rank (" + (shown.groups().isEmpty() ? released.size()
                    : "the first " + released.size()) + ")</h2>\n");
            for (Job.Communicator c : released) {
                communicator(c, false);
            }
        }
        groups(shown);
        others();
        h.write("</body>\n</html>\n");
    }

    private String summary(MergeCommand.Verdict verdict) {
        if (verdict.nothingRead()) {
            return "No report could be read: nothing to merge.";
        }
        StringBuilder s = new StringBuilder();
        if (verdict.leakedComms() == 0) {
            s.append("Every communicator released by every rank")
                    .append(verdict.missingRanks().isEmpty() ? "" : " that wrote a report").append(" (")
                    .append(Words.count(job.communicatorCount(), "communicator", "communicators")).append(")");
        } else {
            s.append(Words.thousands(verdict.leakedComms())).append(" of ").append(Words.thousands(job.communicatorCount()))
                    .append(" communicators not released by every rank");
        }
        if (!verdict.missingRanks().isEmpty()) {
            s.append("; ").append(Words.count(verdict.missingRanks().size(), "communicator names",
                    "communicators name")).append(" ranks without a report");
        }
        if (verdict.unreadable() > 0) {
            s.append("; ").append(Words.count(verdict.unreadable(), "report", "reports")).append(" unreadable");
        }
        if (verdict.leakedComms() == 0 && verdict.anyLeak()) {
            s.append("; events or streams left behind");
        }
        return s.append('.').toString();
    }

    private void reports(List<Inputs.Failure> failures) throws IOException {
        h.write("<details id=\"reports\"" + (job.processes().size() + failures.size() <= 16 ? " open" : "")
                + "><summary>" + esc(Words.count(job.processes().size(), "report", "reports") + " read"
                        + (failures.isEmpty() ? "" : ", " + failures.size() + " unreadable")) + "</summary>\n<ul>\n");
        for (Job.Process p : job.processes()) {
            ReportFile r = p.report();
            h.write("<li data-pid=\"" + r.pid() + "\"><code>" + esc(r.path().toString()) + "</code>: "
                    + esc(r.process()) + ", agent " + esc(r.agentVersion()) + ", " + esc(r.action()) + ", exit "
                    + esc(Words.offset(t0, r.writtenAt())) + "</li>\n");
        }
        for (Inputs.Failure f : failures) {
            h.write("<li class=\"bad\"><code>" + esc(f.name()) + "</code>: " + esc(f.why()) + "</li>\n");
        }
        h.write("</ul>\n</details>\n");
    }

    private void legend() throws IOException {
        h.write("<p class=\"legend\">Legend:<span class=\"sw\" style=\"background:" + RELEASED_COLOR
                + "\"></span>alive, then released by the application<span class=\"sw\" style=\"background:"
                + LEAKED_COLOR + "\"></span>never released: alive until its process exited (leaked)"
                + "<span class=\"sw\" style=\"background:" + WAIT_COLOR + "\"></span>its destroy waiting"
                + "<span class=\"sw missing-sw\"></span>a rank without a report"
                + "<span class=\"sw exit-sw\"></span>its process's exit"
                + "<span class=\"sw mark-sw\"></span>events or streams created there and left behind</p>\n");
    }

    private void index(List<Job.Communicator> attention, List<Job.Communicator> released, Job.Shown shown)
            throws IOException {
        h.write("<nav id=\"index\">\n<h2>Communicators</h2>\n");
        if (!shown.groups().isEmpty()) {
            h.write("<p class=\"grouped-note\">" + esc(Words.thousands(job.communicatorCount()) + " communicators: the"
                    + " first " + attention.size() + " that need a look and the first " + released.size()
                    + " released are shown one by one; ") + "<a href=\"#groups\">" + esc("the other "
                    + Words.thousands(shown.grouped()) + " in " + Words.thousands(shown.groups().size())
                    + " groups of alike ones") + "</a>" + esc(" (merge --json lists every one).") + "</p>\n");
        }
        if (!attention.isEmpty()) {
            h.write("<ol class=\"attention\">\n");
            for (Job.Communicator c : attention) {
                h.write("<li class=\"" + (c.isLeaked() ? "leaked" : "missing") + "\"><a href=\"#" + c.anchor() + "\">"
                        + esc(c.name()) + "</a> " + esc(c.api()) + ": " + esc(verdict(c)) + "</li>\n");
            }
            h.write("</ol>\n");
        }
        if (!released.isEmpty()) {
            h.write("<details><summary><a href=\"#released\">" + released.size()
                    + " released by every rank</a></summary>\n<ol class=\"released\">\n");
            for (Job.Communicator c : released) {
                h.write("<li><a href=\"#" + c.anchor() + "\">" + esc(c.name()) + "</a> " + esc(c.api()) + "</li>\n");
            }
            h.write("</ol>\n</details>\n");
        }
        h.write("</nav>\n");
    }

    /** Groups of alike communicators not shown one by one: a row each, at most {@link #GROUP_ROWS}. */
    private void groups(Job.Shown shown) throws IOException {
        if (shown.groups().isEmpty()) {
            return;
        }
        h.write("<section class=\"groups\" id=\"groups\">\n<h2>" + esc(Words.thousands(shown.grouped())
                + " more communicators, alike ones a row") + "</h2>\n<table>\n<tr><th>communicators</th><th>state</th>"
                + "<th>api</th><th>ranks</th><th>created at</th><th>for example</th></tr>\n");
        int n = 0;
        for (Job.Group g : shown.groups()) {
            if (n++ == GROUP_ROWS) {
                h.write("<tr class=\"more\"><td colspan=\"6\">" + esc("... and " + Words.thousands(shown.groups().size()
                        - GROUP_ROWS) + " more groups (merge --json lists every communicator)") + "</td></tr>\n");
                break;
            }
            String state = g.state.equals("leaked") ? "not released by every rank: " + Words.thousands(g.leakedRanks)
                    + (g.leakedRanks == 1 ? " rank's part" : " ranks' parts") + " left alive"
                    : g.state.equals("missing") ? Words.thousands(g.missingRanks) + " ranks without a report"
                    : g.state.equals("others") ? "more kinds than " + Words.thousands(Job.MAX_GROUPS) + " groups"
                    : "released by every rank";
            h.write("<tr class=\"" + esc(g.state) + "\" data-state=\"" + esc(g.state) + "\" data-count=\"" + g.count
                    + "\"><td>" + Words.thousands(g.count) + "</td><td>" + esc(state) + "</td><td>" + esc(g.api)
                    + "</td><td>" + (g.nranks != null ? g.nranks : "") + "</td><td class=\"frame\"><code>" + esc(g.site)
                    + "</code></td><td><code>" + esc(g.example) + "</code></td></tr>\n");
        }
        h.write("</table>\n</section>\n");
    }

    /** Rows of the groups' table: a page stays a few megabytes whatever the job. */
    static final int GROUP_ROWS = 1_000;

    private static String verdict(Job.Communicator c) {
        StringBuilder v = new StringBuilder();
        if (!c.isLeaked()) {
            v.append("released by every rank").append(c.missing().isEmpty() ? "" : " reported");
        } else if (c.released().isEmpty()) {
            v.append("no rank released it");
        } else {
            v.append("rank ").append(Job.ranks(c.leaked())).append(" never released it: the exit-time NCCL warnings of")
                    .append(" rank ").append(Job.ranks(c.released())).append(" come from it");
        }
        if (!c.missing().isEmpty()) {
            v.append("; no report for rank ").append(Job.ints(c.missing()));
        }
        return v.toString();
    }

    /** A communicator: open with its table and stacks when it needs a look, else collapsed. */
    private void communicator(Job.Communicator c, boolean open) throws IOException {
        Instant from = c.createdAt();
        Instant to = c.endedAt();
        long span = Math.max(1, Duration.between(from, to).toMillis());
        String state = c.isLeaked() ? "leaked" : c.missing().isEmpty() ? "released" : "missing";
        String head = "communicator <code>" + esc(c.name()) + "</code> " + esc(c.api())
                + (c.nranks() != null ? ", " + c.nranks() + " ranks" : "") + ": <span class=\"verdict\">"
                + esc(verdict(c)) + "</span> <span class=\"when\">" + esc("created " + Words.offset(t0, from)
                        + ", lived " + Words.duration(Duration.ofMillis(span))) + "</span>";
        String attrs = " id=\"" + c.anchor() + "\" data-comm-id=\"" + esc(c.name()) + "\" data-state=\"" + state + "\"";
        if (open) {
            h.write("<section class=\"comm " + state + "\"" + attrs + ">\n<h2>" + head + "</h2>\n");
        } else {
            h.write("<details class=\"comm\"" + attrs + "><summary>" + head + "</summary>\n");
        }
        h.write("<div class=\"tl\">\n");
        axis(from, span);
        for (Job.Part p : c.parts()) {
            row(p, from, span);
        }
        for (int rank : c.missing()) {
            h.write("<div class=\"rank-row missing\" data-rank=\"" + rank + "\" data-state=\"missing\"><span class=\"l\">"
                    + "rank " + rank + " · no report</span><span class=\"t\"><i class=\"bar missing\" style=\"left:0%;"
                    + "width:100%\" title=\"" + esc(Job.aboutMissing(c)) + "\"></i></span></div>\n");
        }
        h.write("</div>\n");
        if (!c.missing().isEmpty()) {
            h.write("<p class=\"about-missing\">" + esc(Job.aboutMissing(c))
                    + (c.uncertain() != null ? esc(" (perhaps listed nowhere because " + c.uncertain() + ")") : "")
                    + "</p>\n");
        }
        if (open) {
            table(c);
            h.write("</section>\n");
        } else {
            h.write("</details>\n");
        }
    }

    /** Round ticks (1, 2 or 5 times a power of ten) from the communicator's creation, as durations. */
    private void axis(Instant from, long span) throws IOException {
        long step = step(span);
        h.write("<div class=\"axis\"><span class=\"l\">" + esc("from " + Words.offset(t0, from)) + "</span><span class=\"t\">");
        for (long at = 0; at <= span; at += step) {
            h.write("<i class=\"k\" style=\"left:" + percent(at, span) + "\"><b>" + esc(tick(at, step)) + "</b></i>");
        }
        h.write("</span></div>\n");
    }

    static long step(long span) {
        long step = 1;
        while (true) {
            for (long m : new long[] {1, 2, 5}) {
                if (span / (step * m) <= 6) {
                    return step * m;
                }
            }
            step *= 10;
        }
    }

    /** "0", "+250 ms", "+2 s", "+1.5 s", "+4 min", "+1 h 30 min": precise to the step. */
    static String tick(long ms, long step) {
        if (ms == 0) {
            return "0";
        }
        if (step < 1000 && ms < 1000) {
            return "+" + ms + " ms";
        }
        if (ms < 60_000 || step < 1000) {
            String s = step % 1000 == 0 ? String.valueOf(ms / 1000)
                    : String.format(Locale.ROOT, step % 100 == 0 ? "%.1f" : step % 10 == 0 ? "%.2f" : "%.3f", ms / 1000.0);
            return "+" + s + " s";
        }
        long s = ms / 1000;
        if (ms < 3_600_000) {
            return "+" + s / 60 + " min" + (s % 60 != 0 ? " " + s % 60 + " s" : "");
        }
        return "+" + s / 3600 + " h" + (s % 3600 / 60 != 0 ? " " + s % 3600 / 60 + " min" : "");
    }

    private void row(Job.Part p, Instant from, long span) throws IOException {
        ReportFile.CommEntry e = p.comm();
        String state = p.leaked() ? "leaked" : "released";
        long x0 = at(from, e.createdAt(), span);
        long x1 = Math.max(x0, at(from, p.end(), span));
        h.write("<div class=\"rank-row\" data-rank=\"" + (e.rank() != null ? e.rank() : "?") + "\" data-pid=\""
                + p.report().pid() + "\" data-state=\"" + state + "\"><span class=\"l\">"
                + esc((e.rank() != null ? "rank " + e.rank() : "rank ?") + " · " + p.report().process())
                + "</span><span class=\"t\">");
        h.write("<i class=\"bar " + state + "\" style=\"left:" + percent(x0, span) + ";width:" + percent(x1 - x0, span)
                + "\" title=\"" + esc(tooltip(p)) + "\"></i>");
        if (p.releaseTook() != null && p.releaseWaited()) {
            long w0 = at(from, e.releaseStartedAt(), span);
            h.write("<i class=\"wait\" style=\"left:" + percent(w0, span) + ";width:" + percent(x1 - w0, span)
                    + "\" title=\"" + esc(e.releasedBy() + " waited " + Words.duration(p.releaseTook())) + "\"></i>");
        }
        marks(p.process(), from, span);
        if (p.leaked()) {
            h.write("<i class=\"exit\" style=\"left:" + percent(at(from, p.report().writtenAt(), span), span)
                    + "\"></i>");
        }
        h.write("</span>");
        if (p.leaked()) {
            h.write("<span class=\"leak-label\">" + (e.suppressed() ? "LEAKED (suppressed)" : "LEAKED") + "</span>");
        } else if (p.releaseWaited()) {
            h.write("<span class=\"wait-label\">" + esc("waited " + Words.duration(p.releaseTook())) + "</span>");
        }
        h.write("</div>\n");
    }

    /** The process's events and streams left behind that were created in this window, a mark per bucket. */
    private void marks(Job.Process process, Instant from, long span) throws IOException {
        long[] times = process.workTimes();
        if (times.length == 0) {
            return;
        }
        long start = from.toEpochMilli();
        // a binary search per bucket edge: a row costs the same for ten events or a million
        int[] counts = new int[MARK_BUCKETS];
        int previous = lowerBound(times, start);
        for (int b = 0; b < MARK_BUCKETS; b++) {
            long edge = b == MARK_BUCKETS - 1 ? start + span + 1 : start + span * (b + 1) / MARK_BUCKETS;
            int next = lowerBound(times, edge);
            counts[b] = next - previous;
            previous = next;
        }
        for (int b = 0; b < MARK_BUCKETS; b++) {
            if (counts[b] > 0) {
                h.write("<i class=\"mark\" style=\"left:" + b + "%\" title=\"" + counts[b]
                        + (counts[b] == 1 ? " event or stream" : " events or streams")
                        + " created here and left behind\"></i>");
            }
        }
    }

    private static int lowerBound(long[] sorted, long key) {
        int i = Arrays.binarySearch(sorted, key);
        if (i < 0) {
            return -i - 1;
        }
        while (i > 0 && sorted[i - 1] == key) {
            i--;
        }
        return i;
    }

    private void table(Job.Communicator c) throws IOException {
        h.write("<table>\n<tr><th>rank</th><th>process</th><th>device</th><th>handle</th><th>created</th>"
                + "<th>ended</th><th>how</th><th>created at</th></tr>\n");
        for (Job.Part p : c.parts()) {
            ReportFile.CommEntry e = p.comm();
            h.write("<tr class=\"" + (p.leaked() ? "leaked" : "released") + "\"><td>" + (e.rank() != null ? e.rank() : "?")
                    + "</td><td>" + esc(p.report().process()) + "</td><td>" + (e.device() != null ? e.device() : "")
                    + "</td><td><code>" + esc(e.handle()) + "</code></td><td>" + esc(Words.offset(t0, e.createdAt()))
                    + "</td><td>" + esc(Words.offset(t0, p.end())) + "</td><td>" + esc(how(p))
                    + "</td><td class=\"frame\">");
            List<String> stack = p.stack() != null ? p.stack() : List.of();
            if (!stack.isEmpty()) {
                h.write("<details class=\"stack\"><summary><code>" + esc(stack.get(0)) + "</code>"
                        + (stack.size() > 1 ? " (" + stack.size() + " frames)" : "") + "</summary><pre>");
                for (String frame : stack) {
                    h.write("at " + esc(frame) + "\n");
                }
                h.write("</pre></details>");
            }
            h.write("</td></tr>\n");
        }
        for (int rank : c.missing()) {
            h.write("<tr class=\"missing\"><td>" + rank + "</td><td colspan=\"7\">no report</td></tr>\n");
        }
        h.write("</table>\n");
    }

    private void others() throws IOException {
        List<Job.Process> with = job.processes().stream().filter(p -> p.events() + p.streams() > 0).toList();
        if (with.isEmpty()) {
            return;
        }
        h.write("<section class=\"others\" id=\"work\">\n<h2>Events and streams left behind</h2>\n<table>\n"
                + "<tr><th>process</th><th>what</th><th>handle</th><th>created</th><th>details</th><th>created at</th></tr>\n");
        for (Job.Process p : with) {
            for (ReportFile.LeakEntry l : p.work()) {
                h.write("<tr class=\"leaked\" data-kind=\"" + esc(l.kind().word()) + "\"><td>" + esc(p.name()) + "</td><td>"
                        + esc(l.kind().title()) + "</td><td><code>" + esc(l.handle()) + "</code></td><td>"
                        + esc(Words.offset(t0, l.createdAt())) + "</td><td>" + esc(Words.details(l.details()))
                        + "</td><td class=\"frame\">");
                if (!l.stack().isEmpty()) {
                    h.write("<details class=\"stack\"><summary><code>" + esc(l.stack().get(0)) + "</code></summary><pre>");
                    for (String frame : l.stack()) {
                        h.write("at " + esc(frame) + "\n");
                    }
                    h.write("</pre></details>");
                }
                h.write("</td></tr>\n");
            }
            long more = p.events() + p.streams() - p.work().size();
            if (more > 0) {
                h.write("<tr class=\"more\"><td>" + esc(p.name()) + "</td><td colspan=\"5\">"
                        + esc("... and " + Words.thousands(more) + " more (" + Words.leakCounts(0, p.events(), p.streams())
                                + " in all; the JSON report lists every one)") + "</td></tr>\n");
            }
        }
        h.write("</table>\n</section>\n");
    }

    private static String how(Job.Part p) {
        ReportFile.CommEntry e = p.comm();
        if (!p.leaked()) {
            return "released by " + e.releasedBy()
                    + (p.releaseWaited() ? " (it waited " + Words.duration(p.releaseTook()) + ")" : "");
        }
        String how = e.suppressed() ? "leaked (suppressed)" : "leaked: never destroyed or aborted";
        return e.cleanup() != null && !e.cleanup().equals("none") ? how + "; cleanup " + e.cleanup() : how;
    }

    /** The bar's title: the row's label already says rank and process. */
    private String tooltip(Job.Part p) {
        ReportFile.CommEntry e = p.comm();
        return e.handle() + ": " + Words.offset(t0, e.createdAt()) + " to " + Words.offset(t0, p.end())
                + (p.leaked() ? ", never released (its process's exit)" : " by " + e.releasedBy());
    }

    private static long at(Instant from, Instant t, long span) {
        return Math.max(0, Math.min(span, Duration.between(from, t).toMillis()));
    }

    /** A position or width on the axis, to a tenth of a percent. */
    private static String percent(long part, long span) {
        long tenths = Math.round(part * 1000.0 / span);
        return tenths / 10 + (tenths % 10 == 0 ? "" : "." + tenths % 10) + "%";
    }

    private static String css() {
        return "body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;background:#fff}\n"
                + "h1{font-size:20px;margin:0 0 8px}h2{font-size:16px;margin:0 0 6px}\n"
                + ".summary{font-weight:600}.summary.leaked{color:" + LEAKED_COLOR + "}.summary.clean{color:"
                + RELEASED_COLOR + "}\n"
                + "section.comm{border-left:6px solid " + LEAKED_COLOR + ";padding:8px 12px;margin:16px 0;"
                + "background:#fdecea}\n"
                + "section.comm.missing{border-left-color:" + MISSING_COLOR + ";background:#f3f3f3}\n"
                + "details.comm{border-left:6px solid " + RELEASED_COLOR + ";padding:4px 12px;margin:6px 0;"
                + "background:#f5faf5}details.comm>summary{cursor:pointer}\n"
                + ".verdict{font-weight:400}.leaked .verdict{color:" + LEAKED_COLOR + ";font-weight:700}"
                + ".when{color:#555;font-size:12px}\n"
                + ".tl{margin:6px 0;width:980px}.axis,.rank-row{display:flex;align-items:center;height:24px}"
                + ".axis{height:20px;font-size:11px;color:#555}\n"
                + ".l{width:230px;flex:none;overflow:hidden;white-space:nowrap;text-overflow:ellipsis;font-size:12px}"
                + ".t{position:relative;width:640px;flex:none;height:100%}\n"
                + ".t i{position:absolute;display:block}.k{top:0;bottom:-2000px;border-left:1px solid #ccc;"
                + "pointer-events:none}.k b{position:absolute;left:3px;top:2px;font-weight:400;white-space:nowrap}"
                + ".axis .t{overflow:visible}.tl{overflow:hidden}\n"
                + ".bar{top:5px;height:14px;min-width:2px}.bar.released{background:" + RELEASED_COLOR + "}"
                + ".bar.leaked{background:" + LEAKED_COLOR + "}.bar.missing{background:repeating-linear-gradient("
                + "45deg," + MISSING_COLOR + " 0 6px,#e0e0e0 6px 12px)}\n"
                + ".wait{top:5px;height:14px;background:" + WAIT_COLOR + ";min-width:2px}"
                + ".exit{top:1px;height:22px;border-left:2px dashed #555}"
                + ".mark{top:19px;width:2px;height:5px;background:#6a1b9a}\n"
                + ".leak-label{color:" + LEAKED_COLOR + ";font-weight:700;font-size:12px;margin-left:8px}"
                + ".wait-label{color:#8d6e00;font-size:12px;margin-left:8px}\n"
                + ".rank-row.missing .l{color:#666;font-style:italic}.about-missing{color:#555;font-size:12px}\n"
                + "table{border-collapse:collapse;margin-top:6px}td,th{border:1px solid #ccc;padding:2px 6px;"
                + "text-align:left;font-size:12px;vertical-align:top}tr.leaked td{color:" + LEAKED_COLOR + "}\n"
                + "td.frame{min-width:200px;max-width:640px;word-break:break-all}pre{margin:4px 0;white-space:pre-wrap}\n"
                + ".legend .sw{display:inline-block;width:14px;height:10px;margin:0 4px 0 12px;vertical-align:middle}"
                + ".missing-sw{background:" + MISSING_COLOR + "}.exit-sw{border-left:2px dashed #555;width:0}"
                + ".mark-sw{background:#6a1b9a;width:3px}\n"
                + "nav ol{margin:4px 0;padding-left:24px}nav li.leaked a{color:" + LEAKED_COLOR + ";font-weight:700}\n"
                + "code{font-size:12px}.bad{color:" + LEAKED_COLOR + "}\n"
                + "section.groups tr.leaked td{color:" + LEAKED_COLOR + "}.grouped-note{font-weight:600}\n";
    }

    /** Text and attribute values: every character that HTML gives a meaning escaped. */
    static String esc(String text) {
        if (text == null) {
            return "";
        }
        StringBuilder out = null;
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            String rep = switch (c) {
                case '&' -> "&amp;";
                case '<' -> "&lt;";
                case '>' -> "&gt;";
                case '"' -> "&quot;";
                case '\'' -> "&#39;";
                default -> c < 0x20 && c != '\t' ? " " : null;
            };
            if (rep != null && out == null) {
                out = new StringBuilder(text.length() + 16).append(text, 0, i);
            }
            if (out != null) {
                if (rep != null) {
                    out.append(rep);
                } else {
                    out.append(c);
                }
            }
        }
        return out == null ? text : out.toString();
    }
}
