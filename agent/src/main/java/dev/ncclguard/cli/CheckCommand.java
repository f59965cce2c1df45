package dev.ncclguard.cli;

import dev.ncclguard.json.ReportSchema;
import java.io.PrintStream;
import java.util.Arrays;

/**
 * {@code check REPORT...}: the verdict step after the run (JaCoCo's pattern): one line per report,
 * one per leak, a summary, and exit status 1 when anything leaked or a report is missing,
 * malformed or truncated; 0 when every report is whole and clean.
 */
final class CheckCommand {
    static final String USAGE = "check REPORT...         exit 1 if a JSON report (file, directory, glob) has leaks or is unreadable";

    private CheckCommand() {
    }

    static int run(String[] args, PrintStream out, PrintStream err) {
        if (args.length == 0) {
            err.println("ncclguard check: no reports given; usage: check REPORT... (files, directories, globs)");
            return 2;
        }
        ReportInputs.Loaded loaded = ReportInputs.load(Arrays.asList(args));
        long comms = 0;
        long events = 0;
        long streams = 0;
        long suppressed = 0;
        long created = 0;
        long released = 0;
        int leaky = 0;
        for (ReportFile r : loaded.reports()) {
            ReportSchema.Summary s = r.summary();
            created += s.commsCreated();
            released += s.commsReleased();
            suppressed += r.suppressed().size();
            String tail = r.suppressed().isEmpty() ? "" : " (" + r.suppressed().size() + " suppressed)";
            if (!r.hasLeaks()) {
                out.println("OK    " + r.path() + " (" + r.process() + "): no leaks ("
                        + Words.count(s.commsCreated(), "communicator", "communicators") + " created, "
                        + s.commsReleased() + " released)" + tail);
                continue;
            }
            leaky++;
            comms += s.leakedComms();
            events += s.pendingEvents();
            streams += s.unsyncedStreams();
            out.println("LEAKS " + r.path() + " (" + r.process() + "): "
                    + Words.leakCounts(s.leakedComms(), s.pendingEvents(), s.unsyncedStreams()) + tail);
            for (ReportFile.LeakEntry leak : r.leaks()) {
                out.println("      " + Words.leak(leak));
            }
        }
        for (ReportInputs.Failure f : loaded.failures()) {
            out.println("BAD   " + f.name() + ": " + f.why());
        }
        int total = loaded.reports().size() + loaded.failures().size();
        String reports = Words.count(total, "report", "reports");
        String sup = suppressed > 0 ? "; " + suppressed + " suppressed" : "";
        if (leaky == 0 && loaded.failures().isEmpty()) {
            out.println("ncclguard check: OK: " + reports + ", no leaks ("
                    + Words.count(created, "communicator", "communicators") + " created, " + released + " released"
                    + sup + ")");
            return 0;
        }
        StringBuilder verdict = new StringBuilder("ncclguard check: FAILED: ").append(reports);
        if (leaky > 0) {
            verdict.append(", ").append(leaky).append(" with leaks (")
                    .append(Words.leakCounts(comms, events, streams)).append(sup).append(')');
        }
        if (!loaded.failures().isEmpty()) {
            verdict.append(", ").append(loaded.failures().size()).append(" unreadable (missing, malformed or truncated)");
        }
        out.println(verdict);
        return 1;
    }
}
