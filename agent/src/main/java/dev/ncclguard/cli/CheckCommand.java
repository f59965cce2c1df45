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
            "A report of an agent attached to a running JVM passes as 'OK (partial: tracked since ...)';"
                    + " --require-full fails it.",
            "Exit status: 0 every report whole and without leaks; 1 a leak, or a report missing, malformed or"
                    + " truncated (or partial, with --require-full), or tests that ran without the agent"
                    + " (--test-results); 2 usage, or an input or output that cannot be used (a FIFO, a device)."})
final class CheckCommand implements Callable<Integer> {
    private final Cli.Io io;

    @Parameters(arity = "1..*", paramLabel = "REPORT", description = "reports: files, directories, globs")
    List<String> reports;

    @Option(names = "--junit-xml", paramLabel = "FILE",
            description = "also write the verdict as JUnit XML: a testcase per report, a failure per leak")
    Path junitXml;

    @Option(names = "--require-full",
            description = "fail a report of an agent attached to a running JVM (it saw the JVM only since the attach)")
    boolean requireFull;

    @Option(names = "--test-results", paramLabel = "DIR",
            description = "the test runner's XML results (target/surefire-reports, target/failsafe-reports, Gradle's"
                    + " build/test-results): when tests ran there and the REPORT inputs hold no report, the agent was"
                    + " not in the test JVMs, and the verdict says how to put it there; when no test ran either,"
                    + " there is nothing to check (OK)")
    List<Path> testResults;

    @Option(names = "--allow-no-reports",
            description = "pass when the REPORT inputs hold no report at all (tests meant to run without the agent)")
    boolean allowNoReports;

    CheckCommand(Cli.Io io) {
        this.io = io;
    }

    @Override
    public Integer call() throws Exception {
        PrintStream out = io.out();
        List<Inputs.Named> named = Inputs.reports(reports);
        if (!named.isEmpty() && named.stream().allMatch(CheckCommand::namesNothing)
                && (allowNoReports || testResults != null)) {
            return noReports(named, out);
        }
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
        List<ReportFile> partial = new ArrayList<>();
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
                        junit.report(r, kept, requireFull);
                    }
                    if (r.partial()) {
                        partial.add(r);
                    }
                    ReportSchema.Summary s = r.summary();
                    created += s.commsCreated();
                    released += s.commsReleased();
                    suppressed += s.suppressed();
                    String tail = (s.suppressed() == 0 ? "" : " (" + s.suppressed() + " suppressed)")
                            + (r.partial() ? " (" + r.attached().words() + ")" : "");
                    if (r.partial() && requireFull) {
                        out.println("PARTIAL " + r.path() + " (" + OneLine.of(r.process()) + "): "
                                + r.attached().words() + "; --require-full wants a report of the whole run");
                    }
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
        boolean partialFails = requireFull && !partial.isEmpty();
        if (leaky == 0 && failures.isEmpty() && !partialFails) {
            out.println("ncclguard check: OK" + partialWords(partial, total) + ": " + reportsWord + ", no leaks ("
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
            if (partialFails) {
                verdict.append(", ").append(partial.size()).append(" partial (attached to a running JVM;"
                        + " --require-full)");
            }
            out.println(verdict);
            status = Cli.FAILED;
        }
        return status;
    }

    /**
     * " (partial: tracked since …, attached; …)" when reports were made by an attach: their OK covers
     * the JVM only since then; "" when every report covers its whole run.
     */
    private static String partialWords(List<ReportFile> partial, int total) {
        if (partial.isEmpty()) {
            return "";
        }
        if (partial.size() == 1 && total == 1) {
            return " (" + partial.get(0).attached().words() + ")";
        }
        java.time.Instant first = partial.stream().map(r -> r.attached().at()).min(java.time.Instant::compareTo)
                .orElseThrow();
        return " (partial: " + partial.size() + " of " + total + " reports attached to a running JVM, tracked since"
                + " their attach (the first " + dev.ncclguard.json.IsoTime.format(first) + "); what existed before is"
                + " on their lines)";
    }

    /** An input that names no report: a directory without one, a glob that matches none, a path not there. */
    private static boolean namesNothing(Inputs.Named n) {
        if (n.failure() == null) {
            // a plain path is named even when it is not there: a report directory never made
            return n.files().size() == 1 && !n.arg().endsWith(".json")
                    && !java.nio.file.Files.exists(n.files().get(0), java.nio.file.LinkOption.NOFOLLOW_LINKS);
        }
        if (!n.files().isEmpty()) {
            return false;
        }
        Path path;
        try {
            path = Path.of(n.arg());
        } catch (java.nio.file.InvalidPathException e) {
            return true; // a glob
        }
        return java.nio.file.Files.isDirectory(path) || !java.nio.file.Files.exists(path) && !n.arg().endsWith(".json");
    }

    /**
     * The verdict when no input holds a report: tests ran (their XML results are there) but no test
     * JVM ran the agent, which fails with the fix; no test ran, which passes; or --allow-no-reports.
     */
    private int noReports(List<Inputs.Named> named, PrintStream out) throws java.io.IOException {
        List<String> where = named.stream().map(Inputs.Named::arg).toList();
        long ran = 0;
        List<String> resultDirs = new ArrayList<>();
        for (Path dir : testResults == null ? List.<Path>of() : testResults) {
            long n = testClasses(dir);
            if (n > 0) {
                ran += n;
                resultDirs.add(dir.toString());
            }
        }
        String ranWords = Words.count(ran, "test class", "test classes") + " ran (" + String.join(", ", resultDirs) + ")";
        if (allowNoReports) {
            out.println("ncclguard check: OK: no reports in " + String.join(", ", where) + " (allowed by"
                    + " --allow-no-reports)" + (ran > 0 ? "; " + ranWords + " without the agent" : ""));
            return Cli.OK;
        }
        if (ran == 0) {
            out.println("ncclguard check: OK: no test ran (no TEST-*.xml in " + testResults.stream().map(Path::toString)
                    .collect(java.util.stream.Collectors.joining(", ")) + ") and no report in " + String.join(", ", where)
                    + ": nothing to check");
            return Cli.OK;
        }
        out.println("ncclguard check: FAILED: " + ranWords + " but no test JVM wrote a report in "
                + String.join(", ", where) + ": the agent was not in their command line. Maven: a project that sets its"
                + " own <argLine> keeps the agent with <argLine>@{argLine} ...</argLine>; Gradle: the test task's"
                + " jvmArgumentProviders. Meant that way: --allow-no-reports (Maven: <allowNoReports>true</allowNoReports>)");
        return Cli.FAILED;
    }

    /** How many test classes a directory of surefire/failsafe/Gradle results holds (TEST-*.xml below it). */
    static long testClasses(Path dir) throws java.io.IOException {
        if (!java.nio.file.Files.isDirectory(dir)) {
            return 0;
        }
        try (java.util.stream.Stream<Path> walk = java.nio.file.Files.walk(dir)) {
            return walk.filter(p -> {
                String name = p.getFileName().toString();
                return name.startsWith("TEST-") && name.endsWith(".xml") && java.nio.file.Files.isRegularFile(p);
            }).count();
        }
    }
}
