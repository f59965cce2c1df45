package dev.ncclguard.cli;

import dev.ncclguard.catalog.Kind;
import dev.ncclguard.log.OneLine;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code explain LOG [REPORT...]}: each NCCL warning of a log classified (resource not released
 * at exit, dependency or initialization conflict, network configuration, version mismatch), with
 * its likely cause and fix; with reports, the leaked handles that explain the exit-time ones.
 *
 * <p>The log is streamed and each line costs time in proportion to its length: a line's bytes are
 * searched for NCCL's keyword before anything is decoded, and only warnings and version lines are
 * read further (docs/performance.md, "explain"). Memory is bounded by what is reported: counts,
 * and the first line of each kind of warning per process, never every line.
 */
@Command(name = "explain", mixinStandardHelpOptions = true, versionProvider = Cli.Version.class,
        description = {"Classify a log's NCCL warnings: likely cause, fix, and the leaks behind them.",
            "LOG: a file (gzip is read as such), or - for standard input. REPORT: files, directories, globs.",
            "Exit status: 0 the log was read; 2 usage, or the log or a report cannot be read."})
final class ExplainCommand implements Callable<Integer> {
    private static final int SHOWN_PER_CATEGORY = 8;
    private static final int WIDTH = 100;
    /** Longer lines are read up to this many bytes: one runaway line must not take the whole heap. */
    static final int MAX_LINE = 1 << 20;
    /** A line shown in the output is cut here. */
    private static final int MAX_SHOWN = 400;
    /** Kinds of line kept per category (with their counts); beyond, lines are only counted. */
    private static final int MAX_GROUPS = 1000;
    private static final int MAX_PROCESSES = 64;
    private static final int MAX_PEERS = 4096;
    private static final int MAX_VERSIONS = 4096;
    /** Leaked communicators listed from the reports; the rest are counted. */
    private static final int MAX_COMMS_LISTED = 50;
    /** Progress on a terminal appears once the reading takes longer than this, then every half second. */
    private static final long PROGRESS_AFTER_NANOS = 1_000_000_000L;
    private static final long PROGRESS_EVERY_NANOS = 500_000_000L;

    private final Cli.Io io;

    @Parameters(index = "0", paramLabel = "LOG", description = "the log: a file (.gz too), or - for standard input")
    String log;

    @Parameters(index = "1..*", arity = "0..*", paramLabel = "REPORT",
            description = "reports of the job's processes, to name the leaks behind exit-time warnings")
    List<String> reports = new ArrayList<>();

    @Option(names = "--progress", negatable = true,
            description = "progress on standard error; by default only when it is a terminal and the reading is long")
    Boolean progress;

    ExplainCommand(Cli.Io io) {
        this.io = io;
    }

    /** The warnings of one shape from one process ("... localRank N ..."): how many, and the first. */
    private static final class Group {
        final NcclLog.Line first;
        long count;

        Group(NcclLog.Line first) {
            this.first = first;
        }
    }

    private record GroupKey(String shape, String process) {
    }

    private static final class Found {
        final Map<GroupKey, Group> groups = new LinkedHashMap<>();
        long ungrouped;
        final Set<String> processes = new LinkedHashSet<>();
        long moreProcesses;
        final Set<Integer> peers = new TreeSet<>();
        long count;
    }

    /** What the log says, kept as it is read. */
    private static final class Reading {
        final Map<WarningRules.Category, Found> found = new EnumMap<>(WarningRules.Category.class);
        final Map<String, String> versions = new LinkedHashMap<>();
        final WarningRules.Classifier classifier = new WarningRules.Classifier();
        long lines;

        /** Every line comes here; most go no further than the keyword search, a small method the JIT compiles first. */
        void line(long number, byte[] b, int from, int to, Keywords keywords) {
            if (NcclLog.scan(b, from, to, keywords) == NcclLog.Kind.READ) {
                read(number, b, from, to);
            }
        }

        /** A line that may be a warning, a version or a missing symbol: decoded and read. */
        private void read(long number, byte[] b, int from, int to) {
            String raw = new String(b, from, to - from, StandardCharsets.UTF_8); // bad bytes become U+FFFD
            NcclLog.Line line = NcclLog.parse(number, raw);
            String version = line == null || line.level().equals("INFO")
                    ? NcclLog.version(line != null ? line.message() : raw) : null;
            if (version != null) {
                String who = line != null && line.pid() != null ? line.process() : "line " + number;
                if (versions.size() < MAX_VERSIONS || versions.containsKey(who)) {
                    versions.put(who, version);
                }
                return;
            }
            if (line == null) {
                if (!NcclLog.missingSymbol(raw)) {
                    return;
                }
                line = new NcclLog.Line(number, raw, null, null, null, "ERROR",
                        raw.length() > NcclLog.MAX_MESSAGE ? raw.substring(0, NcclLog.MAX_MESSAGE).strip() : raw.strip());
            }
            if (line.level().equals("INFO") || line.level().equals("TRACE")) {
                return; // NCCL's own progress notes, printed on clean runs too: not warnings
            }
            String shape = WarningRules.shape(line.message());
            WarningRules.Verdict v = classifier.classify(line.message(), shape);
            Found f = found.computeIfAbsent(v.category(), c -> new Found());
            f.count++;
            String process = line.process();
            if (!f.processes.contains(process)) {
                if (f.processes.size() < MAX_PROCESSES) {
                    f.processes.add(process);
                } else {
                    f.moreProcesses++;
                }
            }
            if (v.peer() != null && f.peers.size() < MAX_PEERS) {
                f.peers.add(v.peer());
            }
            // one process's lines only: a line from another process is its own group, and shown
            GroupKey key = new GroupKey(shape, process);
            Group g = f.groups.get(key);
            if (g == null) {
                if (f.groups.size() >= MAX_GROUPS) {
                    f.ungrouped++;
                    return;
                }
                g = new Group(shown(line));
                f.groups.put(key, g);
            }
            g.count++;
        }

        private static NcclLog.Line shown(NcclLog.Line l) {
            String text = l.text().strip();
            if (text.length() > MAX_SHOWN) {
                text = text.substring(0, MAX_SHOWN) + "... (" + Words.thousands(l.text().length()) + " characters)";
            }
            return new NcclLog.Line(l.number(), text, l.host(), l.pid(), l.device(), l.level(), "");
        }
    }

    @Override
    public Integer call() throws Exception {
        PrintStream out = io.out();
        List<Inputs.Named> named = Inputs.reports(reports);
        Inputs.Opened opened = Inputs.openLog(log, io.in());
        Reading reading = new Reading();
        Boolean mode = progress == null ? (io.errIsTerminal() ? Boolean.FALSE : null)
                : progress ? Boolean.TRUE : null;
        Progress progressLine = new Progress(opened, mode, io.err());
        try (InputStream in = opened.in()) {
            read(in, reading, progressLine);
        } catch (IOException e) {
            progressLine.clear();
            throw new CommandException("cannot read " + opened.name() + ": " + Inputs.reason(e)
                    + (opened.gzip() ? " (a gzip stream cut short?)" : ""));
        }
        progressLine.clear();

        List<Inputs.Failure> failures = new ArrayList<>();
        List<LeaksOf> leaks = new ArrayList<>();
        for (Inputs.Named n : named) {
            if (n.failure() != null) {
                failures.add(n.failure());
                continue;
            }
            for (Path file : n.files()) {
                LeaksOf l = new LeaksOf();
                try {
                    l.report = ReportFile.read(file, l);
                    leaks.add(l);
                } catch (ReportFile.BadReportException e) {
                    failures.add(new Inputs.Failure(file.toString(), e.getMessage()));
                }
            }
        }

        Map<WarningRules.Category, Found> found = reading.found;
        Set<String> versions = new LinkedHashSet<>(reading.versions.values());
        long warnings = found.values().stream().mapToLong(f -> f.count).sum();
        List<String> counts = new ArrayList<>();
        found.forEach((c, f) -> counts.add(f.count + " " + c.title));
        out.println("ncclguard explain: " + opened.name() + ": " + Words.count(warnings, "NCCL warning", "NCCL warnings")
                + " in " + Words.count(reading.lines, "line", "lines")
                + (counts.isEmpty() ? "" : ": " + String.join(", ", counts)));
        if (!reading.versions.isEmpty()) {
            Map<String, List<String>> byVersion = new LinkedHashMap<>();
            reading.versions.forEach((who, version) -> byVersion.computeIfAbsent(version, v -> new ArrayList<>()).add(who));
            List<String> parts = new ArrayList<>();
            byVersion.forEach((version, who) -> parts.add(OneLine.of(version) + " (" + OneLine.of(String.join(", ", who)) + ")"));
            out.println("NCCL " + (byVersion.size() == 1 ? "version: " : "versions: ") + String.join("; ", parts));
        }
        for (Inputs.Failure f : failures) {
            out.println("BAD   " + f.name() + ": " + OneLine.of(f.why()));
        }
        if (versions.size() > 1) {
            found.computeIfAbsent(WarningRules.Category.VERSION, c -> new Found());
        }
        for (Map.Entry<WarningRules.Category, Found> e : found.entrySet()) {
            WarningRules.Category category = e.getKey();
            Found f = e.getValue();
            out.println();
            out.println("== " + category.title + ": " + Words.count(f.count, "warning", "warnings")
                    + (f.processes.isEmpty() ? "" : " from " + OneLine.of(String.join(", ", f.processes))
                            + (f.moreProcesses > 0 ? " and " + f.moreProcesses + " more processes" : "")));
            if (category == WarningRules.Category.VERSION && versions.size() > 1) {
                out.println("  the processes print different NCCL versions: " + OneLine.of(String.join(", ", versions)));
            }
            int shown = 0;
            for (Group g : f.groups.values()) {
                if (shown++ == SHOWN_PER_CATEGORY) {
                    out.println("  ... and " + (f.groups.size() - SHOWN_PER_CATEGORY) + " more kinds of line");
                    break;
                }
                out.println("  " + (g.count > 1 ? g.count + " x " : "") + "line " + g.first.number() + ": "
                        + OneLine.of(g.first.text()));
            }
            if (f.ungrouped > 0) {
                out.println("  ... and " + Words.thousands(f.ungrouped) + " more lines of other kinds");
            }
            if (!f.peers.isEmpty()) {
                out.println("  ranks these lines name: " + join(f.peers));
            }
            wrap(out, "  Likely cause: ", category.cause);
            wrap(out, "  Fix: ", category.fix);
            if (category == WarningRules.Category.EXIT && !reports.isEmpty()) {
                explainByReports(out, f, leaks);
            }
        }
        if (warnings == 0 && versions.size() <= 1) {
            out.println("no NCCL warnings (NCCL prints them with NCCL_DEBUG=WARN or INFO)");
        }
        return failures.isEmpty() ? Cli.OK : Cli.USAGE;
    }

    /**
     * Splits the input into lines (LF, CRLF) and hands each to the reading, cut at {@link #MAX_LINE}.
     * The bytes of a chunk are viewed as a Latin-1 string (a copy, no decoding) so that newlines and
     * keywords are found with String.indexOf, which the JIT turns into vector instructions: a line
     * of the application's own costs a few of those searches, and nothing is decoded.
     */
    private static void read(InputStream in, Reading reading, Progress progress) throws IOException {
        byte[] buf = new byte[MAX_LINE + (1 << 16)];
        int filled = 0;
        long number = 0;
        boolean skipping = false; // in the rest of a line cut at MAX_LINE
        while (true) {
            int n = in.read(buf, filled, buf.length - filled);
            boolean eof = n < 0;
            if (!eof) {
                filled += n;
            }
            String text = new String(buf, 0, filled, StandardCharsets.ISO_8859_1);
            Keywords keywords = new Keywords(text);
            int start = 0;
            if (skipping) {
                int nl = text.indexOf('\n');
                if (nl < 0) {
                    filled = 0;
                    if (eof) {
                        break;
                    }
                    continue;
                }
                start = nl + 1;
                skipping = false;
            }
            for (int nl = text.indexOf('\n', start); nl >= 0; nl = text.indexOf('\n', start)) {
                number++;
                reading.line(number, buf, start, end(buf, start, nl), keywords);
                start = nl + 1;
            }
            int rest = filled - start;
            if (eof) {
                if (rest > 0) {
                    number++;
                    reading.line(number, buf, start, end(buf, start, filled), keywords);
                }
                break;
            }
            if (rest >= MAX_LINE) {
                number++;
                reading.line(number, buf, start, start + MAX_LINE, keywords);
                skipping = true;
                filled = 0;
            } else {
                System.arraycopy(buf, start, buf, 0, rest);
                filled = rest;
            }
            progress.tick(number);
        }
        reading.lines = number;
    }

    /** The end of a line without its CR (CRLF line ends). */
    private static int end(byte[] b, int from, int to) {
        return to > from && b[to - 1] == '\r' ? to - 1 : to;
    }

    /**
     * Where the next occurrence of each keyword is in a chunk, found once and reused by the lines
     * before it: each search runs forward from where the last one stopped, so a chunk is searched
     * once per keyword however its lines are cut.
     */
    static final class Keywords {
        private static final String[] WORDS = {"NCCL ", "NCCL version ", "symbol", "Error looking up function"};
        static final int NCCL = 0;
        static final int VERSION = 1;
        static final int SYMBOL = 2;
        static final int LOOKUP = 3;
        private final String text;
        private final int[] next = {-1, -1, -1, -1};
        /** Where each search started: a position at or after it needs no new search. */
        private final int[] from = {-1, -1, -1, -1};

        Keywords(String text) {
            this.text = text;
        }

        /** The first occurrence of keyword {@code w} in [at, to), or -1. */
        int find(int w, int at, int to) {
            if (next[w] == Integer.MAX_VALUE && from[w] <= at) {
                return -1;
            }
            if (from[w] < 0 || at < from[w] || (next[w] < at)) {
                int i = text.indexOf(WORDS[w], at);
                next[w] = i < 0 ? Integer.MAX_VALUE : i;
                from[w] = at;
            }
            return next[w] < to ? next[w] : -1;
        }
    }

    /**
     * Progress on standard error: on a terminal a line rewritten in place, once the reading takes a
     * while; with --progress a line every half second; with --no-progress (or stderr not a
     * terminal) nothing.
     */
    private static final class Progress {
        private final Inputs.Opened input;
        /** null: never; FALSE: on a terminal after a while; TRUE: asked for. */
        private final Boolean mode;
        private final PrintStream err;
        private final long started = System.nanoTime();
        private long last;
        private boolean printed;

        Progress(Inputs.Opened input, Boolean mode, PrintStream err) {
            this.input = input;
            this.mode = mode;
            this.err = err;
            this.last = started;
        }

        void tick(long lines) {
            if (mode == null) {
                return;
            }
            long now = System.nanoTime();
            if (now - last < PROGRESS_EVERY_NANOS || (!mode && now - started < PROGRESS_AFTER_NANOS)) {
                return;
            }
            last = now;
            long read = input.counting().bytesRead();
            String where = input.size() > 0
                    ? String.format(java.util.Locale.ROOT, "%d%% of %s", read * 100 / input.size(), mb(input.size()))
                    : mb(read) + (input.gzip() ? " compressed" : "");
            String text = "ncclguard explain: reading " + input.name() + ": " + where + ", "
                    + Words.thousands(lines) + " lines";
            err.print(mode ? text + "\n" : "\r" + text + "\u001b[K");
            err.flush();
            printed = true;
        }

        void clear() {
            if (printed && Boolean.FALSE.equals(mode)) {
                err.print("\r\u001b[K");
                err.flush();
            }
        }

        private static String mb(long bytes) {
            return bytes >= 10L << 20 ? (bytes >> 20) + " MB" : (bytes >> 10) + " KB";
        }
    }

    /** What explain keeps of a report: its leaked communicators (the first few in full) and its work, grouped. */
    private static final class LeaksOf implements ReportFile.Entries {
        ReportFile report;
        final List<ReportFile.LeakEntry> comms = new ArrayList<>();
        long moreComms;
        final LeakLines work = new LeakLines();
        final LeakLines suppressedWork = new LeakLines();

        @Override
        public void leak(ReportFile.LeakEntry leak) {
            take(leak, work);
        }

        @Override
        public void suppressed(ReportFile.LeakEntry leak) {
            take(leak, suppressedWork);
        }

        private void take(ReportFile.LeakEntry leak, LeakLines groups) {
            if (leak.kind() != Kind.COMM) {
                groups.leak(leak);
            } else if (comms.size() < MAX_COMMS_LISTED) {
                comms.add(leak);
            } else {
                moreComms++;
            }
        }
    }

    /** The leaks of the reports that explain exit-time warnings: first the ranks the lines name. */
    private static void explainByReports(PrintStream out, Found f, List<LeaksOf> reports) {
        Map<String, Integer> named = new LinkedHashMap<>();
        List<String> others = new ArrayList<>();
        List<String> work = new ArrayList<>();
        for (LeaksOf r : reports) {
            String process = OneLine.of(r.report.process()) + ": ";
            for (ReportFile.LeakEntry l : r.comms) {
                String line = process + Words.leak(l) + (l.suppression() != null ? " (suppressed)" : "");
                if (l.rank() != null && f.peers.contains(l.rank())) {
                    named.put(line, l.rank());
                } else {
                    others.add(line);
                }
            }
            if (r.moreComms > 0) {
                others.add(process + "... and " + Words.thousands(r.moreComms) + " more leaked communicators");
            }
            for (String line : r.work.lines()) {
                work.add(process + line);
            }
            for (String line : r.suppressedWork.lines()) {
                work.add(process + line + " (suppressed)");
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
