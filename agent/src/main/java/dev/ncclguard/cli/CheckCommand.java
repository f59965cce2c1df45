package dev.ncclguard.cli;

import dev.ncclguard.json.ReportSchema;
import dev.ncclguard.log.OneLine;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code check REPORT...}: the verdict step after the run (JaCoCo's pattern): one line per report,
 * its leaks grouped a line each, a summary, and exit status 1 when anything leaked or a report is
 * missing, malformed or truncated; 0 when every report is whole and clean. Each report is streamed
 * and only its counts and leak groups are kept, so any report the agent can write is checked in a
 * small heap.
 */
@Command(name = "check", mixinStandardHelpOptions = true, versionProvider = Cli.Version.class,
        description = {"Fail when a JSON report has leaks or is missing, malformed or truncated.",
            "REPORT: a file, a directory (every *.json below it), or a quoted glob ('out/**/*.json').",
            "Exit status: 0 every report whole and without leaks; 1 a leak, or a report missing, malformed or"
                    + " truncated; 2 usage, or an input or output that cannot be used (a FIFO, a device)."})
final class CheckCommand implements Callable<Integer> {
    private final Cli.Io io;

    @Parameters(arity = "1..*", paramLabel = "REPORT", description = "reports: files, directories, globs")
    List<String> reports;

    @Option(names = "--junit-xml", paramLabel = "FILE",
            description = "also write the verdict as JUnit XML: a testcase per report, a failure per leak")
    Path junitXml;

    CheckCommand(Cli.Io io) {
        this.io = io;
    }

    @Override
    public Integer call() throws Exception {
        PrintStream out = io.out();
        List<Inputs.Named> named = Inputs.reports(reports);
        List<Inputs.Failure> failures = new ArrayList<>();
        long comms = 0;
        long events = 0;
        long streams = 0;
        long devComms = 0;
        long memory = 0;
        long suppressed = 0;
        long created = 0;
        long released = 0;
        int leaky = 0;
        int read = 0;
        try (JUnitXml junit = junitXml != null ? new JUnitXml() : null) {
            for (Inputs.Named n : named) {
                if (n.failure() != null) {
                    failures.add(n.failure());
                    continue;
                }
                for (Path file : n.files()) {
                    LeakLines groups = new LeakLines();
                    JUnitXml.Leaks kept = junit != null ? new JUnitXml.Leaks() : null;
                    ReportFile r;
                    try {
                        r = ReportFile.read(file, kept == null ? groups : new ReportFile.Entries() {
                            @Override
                            public void leak(ReportFile.LeakEntry leak) {
                                groups.leak(leak);
                                kept.leak(leak);
                            }
                        });
                    } catch (ReportFile.BadReportException e) {
                        failures.add(new Inputs.Failure(file.toString(), e.getMessage()));
                        continue;
                    }
                    read++;
                    if (junit != null) {
                        junit.report(r, kept);
                    }
                    ReportSchema.Summary s = r.summary();
                    created += s.commsCreated();
                    released += s.commsReleased();
                    suppressed += s.suppressed();
                    String tail = s.suppressed() == 0 ? "" : " (" + s.suppressed() + " suppressed)";
                    if (!r.hasLeaks()) {
                        out.println("OK    " + r.path() + " (" + OneLine.of(r.process()) + "): no leaks ("
                                + Words.count(s.commsCreated(), "communicator", "communicators") + " created, "
                                + s.commsReleased() + " released)" + tail);
                        continue;
                    }
                    leaky++;
                    comms += s.leakedComms();
                    events += s.pendingEvents();
                    streams += s.unsyncedStreams();
                    devComms += s.leakedDevComms();
                    memory += s.leakedMemory();
                    out.println("LEAKS " + r.path() + " (" + OneLine.of(r.process()) + "): "
                            + Words.leakCounts(s) + tail);
                    for (String line : groups.lines()) {
                        out.println("      " + line);
                    }
                }
            }
            for (Inputs.Failure f : failures) {
                out.println("BAD   " + f.name() + ": " + f.why());
                if (junit != null) {
                    junit.unreadable(f);
                }
            }
            if (junit != null) {
                junit.writeTo(junitXml);
                out.println("ncclguard check: JUnit XML written to " + junitXml);
            }
        }
        int total = read + failures.size();
        String reportsWord = Words.count(total, "report", "reports");
        String sup = suppressed > 0 ? "; " + suppressed + " suppressed" : "";
        int status;
        if (leaky == 0 && failures.isEmpty()) {
            out.println("ncclguard check: OK: " + reportsWord + ", no leaks ("
                    + Words.count(created, "communicator", "communicators") + " created, " + released + " released"
                    + sup + ")");
            status = Cli.OK;
        } else {
            StringBuilder verdict = new StringBuilder("ncclguard check: FAILED: ").append(reportsWord);
            if (leaky > 0) {
                verdict.append(", ").append(leaky).append(" with leaks (")
                        .append(Words.leakCounts(comms, events, streams, devComms, memory)).append(sup).append(')');
            }
            if (!failures.isEmpty()) {
                verdict.append(", ").append(failures.size()).append(" unreadable (missing, malformed or truncated)");
            }
            out.println(verdict);
            status = Cli.FAILED;
        }
        return status;
    }
}
