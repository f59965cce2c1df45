package dev.ncclguard.cli;

import dev.ncclguard.log.OneLine;
import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code merge REPORT...}: the per-rank reports of one job joined by commId. For each
 * communicator, which ranks released it and which did not; the rank that did not is the cause of
 * its peers' exit-time NCCL warnings; a rank whose report is missing is named. The same join goes
 * to an HTML page, a JSON document and a Chrome trace (Perfetto) on request.
 */
@Command(name = "merge", mixinStandardHelpOptions = true, versionProvider = Cli.Version.class,
        description = {"Join the reports of a job's ranks by communicator: who released it, who did not, whose"
                + " report is missing.",
            "REPORT: a file, a directory (every *.json below it), or a quoted glob.",
            "Exit status: 0 nothing leaked and every rank reported; 1 a leak, an unreadable report, or a rank a"
                    + " communicator names without a report (unless --allow-missing-ranks); 2 usage, or an input or"
                    + " output that cannot be used."})
final class MergeCommand implements Callable<Integer> {
    private final Cli.Io io;

    @Parameters(arity = "1..*", paramLabel = "REPORT", description = "reports: files, directories, globs")
    List<String> reports;

    @Option(names = "--html", paramLabel = "FILE", description = "write the timeline as one self-contained HTML page")
    Path html;

    @Option(names = "--json", paramLabel = "FILE", description = "write the merge as JSON (schema ncclguard-merge/1)")
    Path json;

    @Option(names = "--trace", paramLabel = "FILE",
            description = "write the job as Chrome trace-event JSON, which Perfetto and chrome://tracing open")
    Path trace;

    @Option(names = "--allow-missing-ranks",
            description = "do not fail when a communicator names ranks whose report is missing (they are still listed)")
    boolean allowMissingRanks;

    MergeCommand(Cli.Io io) {
        this.io = io;
    }

    @Override
    public Integer call() throws Exception {
        List<Inputs.Named> named = Inputs.reports(reports);
        List<Inputs.Failure> failures = new ArrayList<>();
        Job.Builder reading = new Job.Builder();
        for (Inputs.Named n : named) {
            if (n.failure() != null) {
                failures.add(n.failure());
                continue;
            }
            for (Path file : n.files()) {
                Job.Input kept = reading.input();
                try {
                    reading.add(ReportFile.read(file, kept), kept);
                } catch (ReportFile.BadReportException e) {
                    reading.discard(kept);
                    failures.add(new Inputs.Failure(file.toString(), e.getMessage()));
                }
            }
        }
        Job job = reading.build();
        Verdict verdict = new Verdict(job, failures, allowMissingRanks);
        print(job, failures, verdict, io.out());
        if (html != null) {
            OutputFile.write(html, "--html", out -> HtmlTimeline.write(job, failures, verdict, out));
            io.out().println("ncclguard merge: timeline written to " + html);
        }
        if (json != null) {
            OutputFile.write(json, "--json", out -> MergeJson.write(job, failures, verdict, out));
            io.out().println("ncclguard merge: JSON written to " + json);
        }
        if (trace != null) {
            OutputFile.write(trace, "--trace", out -> TraceEvents.write(job, out));
            io.out().println("ncclguard merge: trace written to " + trace + " (open it in https://ui.perfetto.dev)");
        }
        return verdict.failed() ? Cli.FAILED : Cli.OK;
    }

    /** Communicators named in the verdict's line; the rest are counted. */
    static final int NAMED_IN_VERDICT = 20;

    /** What the merge concludes, in one place for the text, the page and the JSON. */
    record Verdict(boolean nothingRead, long leakedComms, boolean anyLeak, List<Job.Communicator> missingRanks,
            boolean missingAllowed, int unreadable, String line) {
        Verdict(Job job, List<Inputs.Failure> failures, boolean allowMissing) {
            this(job.processes().isEmpty(), job.leakedCount(), job.anyLeak(), job.missingRanks(), allowMissing, failures.size(), line(job, failures, allowMissing));
        }

        boolean failed() {
            return nothingRead || anyLeak || unreadable > 0 || (!missingRanks.isEmpty() && !missingAllowed);
        }

        private static String line(Job job, List<Inputs.Failure> failures, boolean allowMissing) {
            if (job.processes().isEmpty()) {
                return "FAILED: no report could be read (" + Words.count(failures.size(), "input", "inputs")
                        + " unreadable): nothing to merge";
            }
            List<String> parts = new ArrayList<>();
            List<String> culprits = new ArrayList<>();
            long leaked = job.leakedCount();
            for (Job.Communicator c : leaked == 0 ? List.<Job.Communicator>of() : job.communicators()) {
                if (culprits.size() >= NAMED_IN_VERDICT) {
                    break;
                }
                List<Job.Part> l = c.leaked();
                if (l.isEmpty()) {
                    continue;
                }
                if (!c.released().isEmpty()) {
                    for (Job.Part p : l) {
                        culprits.add(Job.who(p) + " for " + OneLine.of(c.name()));
                    }
                } else {
                    culprits.add("ranks " + Job.ranks(l) + " for " + OneLine.of(c.name()));
                }
            }
            List<Job.Communicator> missing = job.missingRanks();
            if (leaked == 0) {
                parts.add(missing.isEmpty() ? "every communicator released by every rank"
                        : "every communicator released by every rank that wrote a report");
            } else {
                parts.add(Words.thousands(leaked) + " of " + Words.thousands(job.communicatorCount())
                        + " communicators not released by every rank: " + String.join("; ", culprits)
                        + (leaked > NAMED_IN_VERDICT ? "; and " + Words.thousands(leaked - culprits.size()) + " more" : ""));
            }
            if (!missing.isEmpty()) {
                List<String> which = new ArrayList<>();
                for (Job.Communicator c : missing.subList(0, Math.min(NAMED_IN_VERDICT, missing.size()))) {
                    which.add(OneLine.of(c.name()) + " (rank " + Job.ints(c.missing()) + ")");
                }
                if (missing.size() > NAMED_IN_VERDICT) {
                    which.add("and " + Words.thousands(missing.size() - NAMED_IN_VERDICT) + " more");
                }
                parts.add(Words.count(missing.size(), "communicator names", "communicators name")
                        + " ranks without a report" + (allowMissing ? " (allowed by --allow-missing-ranks)" : "")
                        + ": " + String.join("; ", which));
            }
            if (!failures.isEmpty()) {
                parts.add(Words.count(failures.size(), "report", "reports") + " unreadable");
            }
            return String.join("; ", parts) + partial(job);
        }
    }

    /** " (partial: …)" when an attach made some of the reports: the verdict covers those JVMs only since then. */
    private static String partial(Job job) {
        List<ReportFile> attached = job.processes().stream().map(Job.Process::report).filter(ReportFile::partial)
                .distinct().toList();
        if (attached.isEmpty()) {
            return "";
        }
        if (attached.size() == 1) {
            return " (" + attached.get(0).attached().words() + ")";
        }
        return " (partial: " + attached.size() + " reports attached to a running JVM, each tracked since its attach)";
    }

    static void print(Job job, List<Inputs.Failure> failures, Verdict verdict, PrintStream out) {
        Instant t0 = job.start();
        long processes = job.processes().stream().map(Job.Process::name).distinct().count();
        out.println("ncclguard merge: " + Words.count(job.processes().size(), "report", "reports") + " from "
                + Words.count(processes, "process", "processes") + ", "
                + Words.count(job.communicatorCount(), "communicator", "communicators") + "; times from "
                + t0 + " (the earliest agent start)");
        for (String note : job.notes()) {
            out.println("note: " + OneLine.of(note));
        }
        for (Inputs.Failure f : failures) {
            out.println("BAD   " + f.name() + ": " + OneLine.of(f.why()));
        }
        Job.Shown shown = job.shown();
        List<Job.Communicator> listed = job.communicatorCount() <= Job.SHOWN_ALL ? job.communicators()
                : concat(shown.attention(), shown.released());
        for (Job.Communicator c : listed) {
            out.println();
            out.println("communicator " + OneLine.of(c.name()) + ": " + OneLine.of(c.api())
                    + (c.nranks() != null ? ", " + Words.count(c.nranks(), "rank", "ranks") : "") + "; " + verdict(c));
            for (Job.Part p : c.parts()) {
                out.println("  " + row(p, t0));
            }
            for (int rank : c.missing()) {
                out.println("  rank " + rank + "  no report");
            }
            if (!c.missing().isEmpty()) {
                out.println("  => " + OneLine.of(Job.aboutMissing(c))
                        + (c.uncertain() != null ? " (perhaps listed nowhere because " + OneLine.of(c.uncertain())
                                + ")" : ""));
            }
            List<Job.Part> leaked = c.leaked();
            List<Job.Part> released = c.released();
            if (!leaked.isEmpty() && !released.isEmpty()) {
                for (Job.Part p : leaked) {
                    String rank = p.comm().rank() != null ? String.valueOf(p.comm().rank()) : "N";
                    out.println("  => " + Job.who(p) + " never released it: it causes the exit-time NCCL warnings"
                            + " of rank " + Job.ranks(released) + " ([Service thread] ... localRank " + rank
                            + ", [Proxy Service] Failed to execute operation Close from rank " + rank + ")");
                }
            } else if (!leaked.isEmpty()) {
                out.println("  => no rank released it");
            }
        }
        if (!shown.groups().isEmpty()) {
            out.println();
            out.println(Words.thousands(shown.grouped()) + " more communicators, alike ones a line (--json lists"
                    + " every one):");
            int n = 0;
            for (Job.Group g : shown.groups()) {
                if (n++ == GROUPS_PRINTED) {
                    out.println("  ... and " + Words.thousands(shown.groups().size() - GROUPS_PRINTED) + " more groups");
                    break;
                }
                out.println("  " + OneLine.of(g.line()));
            }
        }
        List<String> others = new ArrayList<>();
        for (Job.Process p : job.processes()) {
            if (p.events() + p.streams() > 0) {
                others.add(OneLine.of(p.name()) + " (" + p.report().path() + "): "
                        + Words.leakCounts(0, p.events(), p.streams()));
            }
        }
        if (!others.isEmpty()) {
            out.println();
            out.println("events and streams left behind:");
            others.forEach(o -> out.println("  " + o));
        }
        out.println();
        out.println("ncclguard merge: " + verdict.line());
    }

    /** Groups of alike communicators printed; the page lists more. */
    static final int GROUPS_PRINTED = 50;

    private static <T> List<T> concat(List<T> a, List<T> b) {
        List<T> out = new ArrayList<>(a);
        out.addAll(b);
        return out;
    }

    private static String verdict(Job.Communicator c) {
        List<Job.Part> leaked = c.leaked();
        String missing = c.missing().isEmpty() ? "" : "; no report for rank " + Job.ints(c.missing());
        if (leaked.isEmpty()) {
            return "released by every rank" + (c.missing().isEmpty() ? "" : " reported") + missing;
        }
        if (leaked.size() == c.parts().size()) {
            return "no rank released it" + missing;
        }
        return "rank " + Job.ranks(leaked) + " did not release it, rank " + Job.ranks(c.released()) + " did" + missing;
    }

    private static String row(Job.Part p, Instant t0) {
        ReportFile.CommEntry c = p.comm();
        StringBuilder out = new StringBuilder();
        out.append(c.rank() != null ? "rank " + c.rank() : "rank ?").append("  ")
                .append(OneLine.of(p.report().process()))
                .append(c.device() != null ? "  device " + c.device() : "")
                .append("  ").append(OneLine.of(c.handle()))
                .append("  created ").append(Words.offset(t0, c.createdAt()));
        if (!c.leaked()) {
            out.append("  released ").append(Words.offset(t0, c.releasedAt())).append(" by ")
                    .append(OneLine.of(c.releasedBy()));
            if (p.releaseWaited()) {
                out.append(" (it waited ").append(Words.duration(p.releaseTook())).append(')');
            }
        } else {
            out.append("  NOT RELEASED").append(c.suppressed() ? " (suppressed)" : "")
                    .append(", alive at exit ").append(Words.offset(t0, p.report().writtenAt()));
            if (c.cleanup() != null && !c.cleanup().equals("none")) {
                out.append(", cleanup ").append(OneLine.of(c.cleanup()));
            }
            if (p.stack() != null && !p.stack().isEmpty()) {
                out.append(", created at ").append(OneLine.of(p.stack().get(0)));
            }
        }
        return out.toString();
    }
}
