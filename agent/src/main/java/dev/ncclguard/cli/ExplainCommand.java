package dev.ncclguard.cli;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * {@code explain LOGFILE [REPORT...]}: each NCCL warning of a log classified (resource not released
 * at exit, dependency or initialization conflict, network configuration, version mismatch), with
 * its likely cause and fix; with reports, the leaked handles that explain the exit-time ones.
 * Exit status 0 once the log was read (warnings or not), 1 when a report is unreadable, 2 when
 * the log is.
 */
final class ExplainCommand {
    static final String USAGE = "explain LOG [REPORT...] classify a log's NCCL warnings: cause, fix, and the leaks behind them";
    private static final int SHOWN_PER_CATEGORY = 6;
    private static final int WIDTH = 100;

    private ExplainCommand() {
    }

    /** The warnings of one shape ("... localRank N ..."): how many, the first, the processes and ranks. */
    private static final class Group {
        final NcclLog.Line first;
        int count;

        Group(NcclLog.Line first) {
            this.first = first;
        }
    }

    private static final class Found {
        final Map<String, Group> groups = new LinkedHashMap<>();
        final Set<String> processes = new LinkedHashSet<>();
        final Set<Integer> peers = new TreeSet<>();
        int count;
    }

    static int run(String[] args, PrintStream out, PrintStream err) {
        if (args.length == 0) {
            err.println("ncclguard explain: no log given; usage: " + USAGE);
            return 2;
        }
        Path logPath = Path.of(args[0]);
        NcclLog log = new NcclLog();
        // a decoder that replaces bad bytes: a log is whatever the processes wrote, not UTF-8 by contract
        try (BufferedReader in = new BufferedReader(new InputStreamReader(Files.newInputStream(logPath),
                StandardCharsets.UTF_8))) {
            for (String line = readLine(in); line != null; line = readLine(in)) {
                log.add(line);
            }
        } catch (IOException e) {
            err.println("ncclguard explain: cannot read " + logPath + ": " + ReportInputs.reason(e));
            return 2;
        }
        ReportInputs.Loaded loaded = args.length > 1
                ? ReportInputs.load(Arrays.asList(args).subList(1, args.length))
                : new ReportInputs.Loaded(List.of(), List.of());

        Map<WarningRules.Category, Found> found = new EnumMap<>(WarningRules.Category.class);
        for (NcclLog.Line line : log.lines()) {
            if (line.level().equals("INFO") || line.level().equals("TRACE")) {
                continue; // NCCL's own progress notes, printed on clean runs too: not warnings
            }
            WarningRules.Verdict v = WarningRules.classify(line.message());
            Found f = found.computeIfAbsent(v.category(), c -> new Found());
            f.count++;
            f.processes.add(line.process());
            if (v.peer() != null) {
                f.peers.add(v.peer());
            }
            f.groups.computeIfAbsent(WarningRules.shape(line.message()), k -> new Group(line)).count++;
        }
        Set<String> versions = new LinkedHashSet<>(log.versions().values());

        int warnings = found.values().stream().mapToInt(f -> f.count).sum();
        List<String> counts = new ArrayList<>();
        found.forEach((c, f) -> counts.add(f.count + " " + c.title));
        out.println("ncclguard explain: " + logPath + ": " + Words.count(warnings, "NCCL warning", "NCCL warnings")
                + " in " + Words.count(log.read(), "line", "lines") + (counts.isEmpty() ? "" : ": " + String.join(", ", counts)));
        if (!log.versions().isEmpty()) {
            Map<String, List<String>> byVersion = new LinkedHashMap<>();
            log.versions().forEach((who, version) -> byVersion.computeIfAbsent(version, v -> new ArrayList<>()).add(who));
            List<String> parts = new ArrayList<>();
            byVersion.forEach((version, who) -> parts.add(Words.clean(version) + " (" + Words.clean(String.join(", ", who)) + ")"));
            out.println("NCCL " + (byVersion.size() == 1 ? "version: " : "versions: ") + String.join("; ", parts));
        }
        for (ReportInputs.Failure f : loaded.failures()) {
            out.println("BAD   " + f.name() + ": " + f.why());
        }
        if (versions.size() > 1) {
            found.computeIfAbsent(WarningRules.Category.VERSION, c -> new Found());
        }
        for (Map.Entry<WarningRules.Category, Found> e : found.entrySet()) {
            WarningRules.Category category = e.getKey();
            Found f = e.getValue();
            out.println();
            out.println("== " + category.title + ": " + Words.count(f.count, "warning", "warnings")
                    + (f.processes.isEmpty() ? "" : " from " + Words.clean(String.join(", ", f.processes))));
            if (category == WarningRules.Category.VERSION && versions.size() > 1) {
                out.println("  the processes print different NCCL versions: " + Words.clean(String.join(", ", versions)));
            }
            int shown = 0;
            for (Group g : f.groups.values()) {
                if (shown++ == SHOWN_PER_CATEGORY) {
                    out.println("  ... and " + (f.groups.size() - SHOWN_PER_CATEGORY) + " more kinds of line");
                    break;
                }
                out.println("  " + (g.count > 1 ? g.count + " x " : "") + "line " + g.first.number() + ": "
                        + Words.clean(g.first.text().strip()));
            }
            if (!f.peers.isEmpty()) {
                out.println("  ranks these lines name: " + join(f.peers));
            }
            cause(out, category);
            if (category == WarningRules.Category.EXIT && args.length > 1) {
                explainByReports(out, f, loaded.reports());
            }
        }
        if (warnings == 0 && versions.size() <= 1) {
            out.println("no NCCL warnings (NCCL prints them with NCCL_DEBUG=WARN or INFO)");
        }
        return loaded.failures().isEmpty() ? 0 : 1;
    }

    /** Lines longer than a megabyte are cut: one runaway line must not take the whole heap. */
    private static String readLine(BufferedReader in) throws IOException {
        String line = in.readLine();
        return line != null && line.length() > (1 << 20) ? line.substring(0, 1 << 20) : line;
    }

    private static void cause(PrintStream out, WarningRules.Category category) {
        wrap(out, "  Likely cause: ", category.cause);
        wrap(out, "  Fix: ", category.fix);
    }

    /** The leaks of the reports that explain exit-time warnings: first the ranks the lines name. */
    private static void explainByReports(PrintStream out, Found f, List<ReportFile> reports) {
        Map<String, Integer> named = new LinkedHashMap<>();
        List<String> others = new ArrayList<>();
        List<String> work = new ArrayList<>();
        for (ReportFile r : reports) {
            for (List<ReportFile.LeakEntry> list : List.of(r.leaks(), r.suppressed())) {
                for (ReportFile.LeakEntry l : list) {
                    String line = Words.clean(r.process()) + ": " + Words.leak(l)
                            + (l.suppression() != null ? " (suppressed)" : "");
                    if (!l.kind().equals("comm")) {
                        work.add(line);
                    } else if (l.rank() != null && f.peers.contains(l.rank())) {
                        named.put(line, l.rank());
                    } else {
                        others.add(line);
                    }
                }
            }
        }
        out.println("  In the reports (" + Words.count(reports.size(), "report", "reports") + "):");
        named.forEach((line, rank) -> {
            out.println("    " + line);
            out.println("      => explains the lines that name rank " + rank);
        });
        for (String line : others) {
            out.println("    " + line);
        }
        if (named.isEmpty() && others.isEmpty()) {
            wrap(out, "    ", "no report lists a leaked communicator: a process that crashed or was killed"
                    + " (it writes no report), or one that ran without the agent, is the likelier source; check that"
                    + " every rank's report is among those given.");
        } else if (named.isEmpty() && !f.peers.isEmpty()) {
            wrap(out, "    ", "none of these is on rank " + join(f.peers) + ", which the lines name: localRank counts"
                    + " the ranks on one node, so on several nodes compare with each node's ranks; a rank with no"
                    + " report among these may be the one.");
        }
        if (!work.isEmpty()) {
            out.println("    work left behind at exit (the CUDA calls NCCL makes while a process unloads fail on it):");
            for (String line : work) {
                out.println("      " + line);
            }
        }
    }

    private static String join(Set<Integer> ints) {
        List<String> out = new ArrayList<>();
        ints.forEach(i -> out.add(String.valueOf(i)));
        return String.join(", ", out);
    }

    /** Prints {@code text} after {@code head}, wrapped at word boundaries, continued under the head's indent. */
    static void wrap(PrintStream out, String head, String text) {
        String indent = " ".repeat(head.length() - head.stripLeading().length() + 2);
        StringBuilder line = new StringBuilder(head);
        boolean first = true;
        for (String word : text.split(" ")) {
            if (line.length() + 1 + word.length() > WIDTH && line.length() > indent.length()) {
                out.println(line);
                line = new StringBuilder(indent);
                first = true;
            }
            if (!first) {
                line.append(' ');
            }
            line.append(word);
            first = false;
        }
        out.println(line);
    }
}
