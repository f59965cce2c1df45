package dev.ncclguard.cli;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/**
 * {@code merge REPORT... [--html OUT]}: the per-rank reports of one job joined by commId. For each
 * communicator, which ranks released it and which did not; the rank that did not is the cause of
 * its peers' exit-time NCCL warnings. Exit status 1 when anything leaked or a report is unreadable.
 */
final class MergeCommand {
    static final String USAGE = "merge REPORT... [--html OUT]  join the reports of a job's ranks by communicator";

    private MergeCommand() {
    }

    static int run(String[] args, PrintStream out, PrintStream err) throws IOException {
        List<String> inputs = new ArrayList<>();
        Path html = null;
        for (int i = 0; i < args.length; i++) {
            if (args[i].equals("--html")) {
                if (i + 1 >= args.length) {
                    err.println("ncclguard merge: --html needs a file name");
                    return 2;
                }
                html = Path.of(args[++i]);
            } else if (args[i].startsWith("--html=")) {
                html = Path.of(args[i].substring("--html=".length()));
            } else if (args[i].startsWith("--")) {
                err.println("ncclguard merge: unknown option " + args[i] + "; usage: " + USAGE);
                return 2;
            } else {
                inputs.add(args[i]);
            }
        }
        if (inputs.isEmpty()) {
            err.println("ncclguard merge: no reports given; usage: " + USAGE);
            return 2;
        }
        ReportInputs.Loaded loaded = ReportInputs.load(inputs);
        Job job = Job.of(loaded.reports());
        print(job, loaded.failures(), out);
        if (html != null) {
            Path parent = html.toAbsolutePath().getParent();
            if (parent != null) {
                Files.createDirectories(parent);
            }
            Files.writeString(html, HtmlTimeline.page(job, loaded.failures()), StandardCharsets.UTF_8);
            out.println("ncclguard merge: timeline written to " + html);
        }
        boolean leaks = loaded.reports().stream().anyMatch(ReportFile::hasLeaks);
        return leaks || !loaded.failures().isEmpty() ? 1 : 0;
    }

    static void print(Job job, List<ReportInputs.Failure> failures, PrintStream out) {
        Instant t0 = job.start();
        long processes = job.reports().stream().map(ReportFile::process).distinct().count();
        out.println("ncclguard merge: " + Words.count(job.reports().size(), "report", "reports") + " from "
                + Words.count(processes, "process", "processes") + ", "
                + Words.count(job.communicators().size(), "communicator", "communicators") + "; times from "
                + t0 + " (the earliest agent start)");
        for (String note : job.notes()) {
            out.println("note: " + note);
        }
        for (ReportInputs.Failure f : failures) {
            out.println("BAD   " + f.name() + ": " + f.why());
        }
        List<String> culprits = new ArrayList<>();
        for (Job.Communicator c : job.communicators()) {
            out.println();
            out.println("communicator " + Words.clean(c.name()) + ": " + Words.clean(c.api())
                    + (c.nranks() != null ? ", " + Words.count(c.nranks(), "rank", "ranks") : "") + "; " + verdict(c));
            for (Job.Part p : c.parts()) {
                out.println("  " + row(p, t0));
            }
            for (int rank : c.missing()) {
                out.println("  rank " + rank + "  no report");
            }
            List<Job.Part> leaked = c.leaked();
            List<Job.Part> released = c.released();
            if (!leaked.isEmpty() && !released.isEmpty()) {
                for (Job.Part p : leaked) {
                    String rank = p.comm().rank() != null ? String.valueOf(p.comm().rank()) : "N";
                    out.println("  => " + Job.who(p) + " never released it: it causes the exit-time NCCL warnings"
                            + " of rank " + Job.ranks(released) + " ([Service thread] ... localRank " + rank
                            + ", [Proxy Service] Failed to execute operation Close from rank " + rank + ")");
                    culprits.add(Job.who(p) + " for " + Words.clean(c.name()));
                }
            } else if (!leaked.isEmpty()) {
                out.println("  => no rank released it");
                culprits.add("ranks " + Job.ranks(leaked) + " for " + Words.clean(c.name()));
            }
        }
        List<String> others = new ArrayList<>();
        for (ReportFile r : job.reports()) {
            long events = r.leaks().stream().filter(l -> l.kind().equals("event")).count();
            long streams = r.leaks().stream().filter(l -> l.kind().equals("stream")).count();
            if (events + streams > 0) {
                others.add(Words.clean(r.process()) + " (" + r.path() + "): " + Words.leakCounts(0, events, streams));
            }
        }
        if (!others.isEmpty()) {
            out.println();
            out.println("events and streams left behind:");
            others.forEach(o -> out.println("  " + o));
        }
        out.println();
        long leakedComms = job.communicators().stream().filter(c -> !c.leaked().isEmpty()).count();
        out.println("ncclguard merge: " + (leakedComms == 0 ? "every communicator released by every rank"
                : leakedComms + " of " + job.communicators().size() + " communicators not released by every rank: "
                        + String.join("; ", culprits)));
    }

    private static String verdict(Job.Communicator c) {
        List<Job.Part> leaked = c.leaked();
        String missing = c.missing().isEmpty() ? "" : "; no report for rank " + joinInts(c.missing());
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
                .append(Words.clean(p.report().process()))
                .append(c.device() != null ? "  device " + c.device() : "")
                .append("  ").append(Words.clean(c.handle()))
                .append("  created ").append(Words.offset(t0, c.createdAt()));
        if (!c.leaked()) {
            out.append("  released ").append(Words.offset(t0, c.releasedAt())).append(" by ")
                    .append(Words.clean(c.releasedBy()));
        } else {
            out.append("  NOT RELEASED").append(c.suppressed() ? " (suppressed)" : "")
                    .append(", alive at exit ").append(Words.offset(t0, p.report().writtenAt()));
            if (c.cleanup() != null && !c.cleanup().equals("none")) {
                out.append(", cleanup ").append(Words.clean(c.cleanup()));
            }
            if (p.leak() != null && p.leak().topFrame() != null) {
                out.append(", created at ").append(Words.clean(p.leak().topFrame()));
            }
        }
        return out.toString();
    }

    private static String joinInts(List<Integer> ints) {
        List<String> out = new ArrayList<>();
        ints.forEach(i -> out.add(String.valueOf(i)));
        return String.join(", ", out);
    }
}
