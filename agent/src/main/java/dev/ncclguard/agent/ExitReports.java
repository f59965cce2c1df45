package dev.ncclguard.agent;

import dev.ncclguard.config.Options;
import dev.ncclguard.config.OutputNames;
import dev.ncclguard.log.Log;
import dev.ncclguard.report.JsonReportWriter;
import dev.ncclguard.report.NumberedFiles;
import dev.ncclguard.report.Report;
import dev.ncclguard.report.TextReportWriter;
import dev.ncclguard.report.WriteGate;
import java.util.concurrent.TimeUnit;

/** The exit's report files (JSON and text), written on a thread of their own under a deadline. */
final class ExitReports {
    private ExitReports() {
    }

    /**
     * Writes the reports on a thread of their own and waits for it until {@code until} (a nanoTime);
     * past it the write is abandoned: no file of it is put in place, its temporary file is removed,
     * and one line says which report was lost and what to raise. False when a report is lost.
     */
    static boolean writeBy(Options options, Report report, boolean sawAnyCall, long until) {
        WriteGate gate = new WriteGate();
        ReportWrite write = new ReportWrite(options, report, sawAnyCall, gate);
        Thread writer = new Thread(write, "ncclguard-exit-report");
        writer.setDaemon(true);
        writer.start();
        try {
            TimeUnit.NANOSECONDS.timedJoin(writer, Math.max(1, until - System.nanoTime()));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (write.done) {
            return write.written;
        }
        gate.abandon();
        if (write.done) {
            return write.written; // it ended while the gate waited for its rename
        }
        Log.exitWarning(new StringBuilder(256).append("the ").append("text".equals(write.optionKey) ? "text report" : "report")
                .append(" to ").append(write.target).append(" was not written: writing it took longer than timeout=")
                .append(options.timeout().toMillis()).append("ms plus ").append(TimeUnit.NANOSECONDS.toMillis(Lifecycle.WRITE_MARGIN_NANOS))
                .append(" ms (").append(report.leaks().size()).append(" leaks); raise timeout= so that it has the time")
                .toString());
        return false;
    }

    /** The exit's report write, on its own thread. A class, not a lambda: no method handles to link at exit. */
    private static final class ReportWrite implements Runnable {
        private final Options options;
        private final Report report;
        private final boolean sawAnyCall;
        private final WriteGate gate;
        /** The output being written now, for the line if it is abandoned. */
        volatile String optionKey = "report";
        volatile String target;
        volatile boolean written;
        volatile boolean done;

        ReportWrite(Options options, Report report, boolean sawAnyCall, WriteGate gate) {
            this.options = options;
            this.report = report;
            this.sawAnyCall = sawAnyCall;
            this.gate = gate;
            this.target = options.report();
        }

        @Override
        public void run() {
            try {
                written = writeReports(options, report, report.pid(), report.host(), sawAnyCall, this);
            } catch (Throwable t) {
                if (!gate.abandoned()) {
                    Log.error("exit report failed", t);
                }
            } finally {
                done = true;
            }
        }
    }

    /** False when a report file could not be written (its one line is on stderr already). */
    private static boolean writeReports(Options options, Report report, long pid, String host, boolean sawAnyCall,
                                        ReportWrite progress) {
        WriteGate gate = progress.gate;
        NumberedFiles.Names names = new NumberedFiles.Names(pid, host,
                OutputNames.startTime(report.startedAt().toEpochMilli()), System.getenv());
        boolean written = true;
        String json = options.report();
        long number = -1; // what %n took for the JSON report: the text report takes the same
        if (json != null) {
            number = NumberedFiles.write(json, JsonReportWriter.content(report), "report", names, -1, gate);
            written = number != NumberedFiles.FAILED;
        }
        // A JVM that never touched NCCL or CUDA gets no text at all: the agent stays invisible.
        if (!sawAnyCall && !report.hasLeaks()) {
            return written;
        }
        String notLogged = options.textToLog() ? Log.logReport(TextReportWriter.logEntries(report)) : null;
        if (options.textToStderr() || notLogged != null) {
            if (notLogged != null) {
                System.err.println("ncclguard: text=log: " + notLogged);
            }
            System.err.print(TextReportWriter.toText(report));
            System.err.flush();
        } else {
            String text = options.textPath(pid, host) == null ? null : options.text();
            if (text != null) {
                progress.optionKey = "text";
                progress.target = text;
                written &= NumberedFiles.write(text, TextReportWriter.toBytes(report), "text", names,
                        Math.max(number, -1), gate) != NumberedFiles.FAILED;
            }
        }
        return written;
    }
}
