package dev.ncclguard.cli;

import dev.ncclguard.catalog.Kind;
import dev.ncclguard.log.OneLine;
import java.time.Duration;
import java.time.Instant;
import java.util.AbstractList;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.RandomAccess;

/**
 * The reports of one job joined: each communicator matched across ranks and processes by its
 * commId (the same on every rank, SPEC "details.commId"), with each rank's part: released, how
 * and when, or left alive at exit. The rank that left it alive is the one whose exit its peers'
 * NCCL proxy threads saw as a dropped connection; a rank that no report has (a process killed
 * with SIGKILL writes none) is named as missing.
 */
final class Job {
    /** Ranks above this are not listed one by one as missing. */
    private static final int MAX_MISSING_LISTED = 1024;
    /** Events and streams left behind kept in full per process, for the tables; the rest are counted. */
    static final int WORK_KEPT = 20;
    /** A release that took at least this long waited (for peers, for work): the page says so. */
    static final Duration WAITED = Duration.ofMillis(100);
    /**
     * Up to this many communicators, the text and the page show every one; past it, the first
     * {@link #SHOWN_ATTENTION} that need a look and the first {@link #SHOWN_RELEASED} released ones,
     * and the rest as groups alike (docs/usage.md, "merge"). --json and --trace list every one.
     */
    static final int SHOWN_ALL = 500;
    static final int SHOWN_ATTENTION = 200;
    static final int SHOWN_RELEASED = 100;
    /** Groups of communicators not shown one by one; past it, one group "others". */
    static final int MAX_GROUPS = 10_000;
    /** Comm leak entries of one report kept in case it has no communicators list (an older agent). */
    static final int LEAKS_KEPT_UNLISTED = 10_000;
    /** Characters of distinct creating stacks kept (frames repeat: a place's stack is kept once). */
    private static final long STACK_CHARS_KEPT = 16L << 20;
    /** Distinct values of a communicator's api, thread, releasedBy and cleanup kept; past it "…". */
    private static final int MAX_WORDS = 1 << 16;

    private static final int NONE = Integer.MIN_VALUE;
    private static final long NO_TIME = Long.MIN_VALUE;

    /**
     * What merge keeps of one report while it is streamed: its communicators go straight to the
     * job's columns, its leaked communicators' stacks to the job's depot (linked by handle and
     * creation), and of its events and streams the count, the creation times (8 bytes each, for
     * the timeline's marks) and the first few in full.
     */
    static final class Input implements ReportFile.Entries {
        private final Builder job;
        private final int from;
        /** (handle, creation) of each leaked communicator: its stack's id in the depot. */
        private final LongIntMap stackOf = new LongIntMap();
        final List<ReportFile.LeakEntry> commLeaks = new ArrayList<>();
        long commLeaksNotKept;
        final List<ReportFile.LeakEntry> work = new ArrayList<>();
        long events;
        long streams;
        private long[] workTimes = new long[64];
        private int workTimeCount;

        private Input(Builder job) {
            this.job = job;
            this.from = job.parts.size;
        }

        @Override
        public void leak(ReportFile.LeakEntry leak) {
            take(leak, false);
        }

        @Override
        public void suppressed(ReportFile.LeakEntry leak) {
            take(leak, true);
        }

        private void take(ReportFile.LeakEntry leak, boolean suppressed) {
            if (leak.kind() == Kind.COMM) {
                stackOf.put(link(leak.handle(), leak.createdAt()), job.stacks.id(leak.stack()));
                if (commLeaks.size() < LEAKS_KEPT_UNLISTED) {
                    commLeaks.add(leak);
                } else {
                    commLeaksNotKept++;
                }
                return;
            }
            // device communicators and memory are not work on a stream: merge does not place them
            if (suppressed || leak.kind() == Kind.DEVCOMM || leak.kind() == Kind.MEMORY) {
                return;
            }
            if (leak.kind() == Kind.EVENT) {
                events++;
            } else {
                streams++;
            }
            if (work.size() < WORK_KEPT) {
                work.add(leak);
            }
            if (workTimeCount == workTimes.length) {
                workTimes = Arrays.copyOf(workTimes, workTimeCount * 2);
            }
            workTimes[workTimeCount++] = leak.createdAt().toEpochMilli();
        }

        @Override
        public void communicator(ReportFile.CommEntry comm) {
            job.parts.add(comm, job.words);
        }

        long[] workTimes() {
            long[] t = Arrays.copyOf(workTimes, workTimeCount);
            Arrays.sort(t);
            return t;
        }
    }

    /** The reports of a job as they are read, one at a time, into columns; then {@link #build}. */
    static final class Builder {
        private final Parts parts = new Parts();
        private final Vocabulary words = new Vocabulary();
        private final Stacks stacks = new Stacks();
        private final List<String> notes = new ArrayList<>();
        private final Map<ReportFile.Identity, ReportFile> byIdentity = new HashMap<>();
        private final List<Process> processes = new ArrayList<>();
        private final List<Process> unlisted = new ArrayList<>();
        private final List<Process> omitting = new ArrayList<>();

        /** What to hand the next report's reading. */
        Input input() {
            return new Input(this);
        }

        /** A report that could not be read: what it added is taken back. */
        void discard(Input in) {
            parts.truncate(in.from);
        }

        /** A report read whole; false (and nothing kept) when it is a copy of one read before. */
        boolean add(ReportFile r, Input in) {
            // a report copied under another name would show each of its ranks twice
            ReportFile same = byIdentity.putIfAbsent(r.identity(), r);
            if (same != null) {
                notes.add(r.path() + " is the same report as " + same.path() + " (" + r.process() + "): read once");
                parts.truncate(in.from);
                return false;
            }
            int index = processes.size();
            Process process = new Process(r, List.copyOf(in.work), in.events, in.streams, in.workTimes());
            processes.add(process);
            if (!r.communicatorsListed()) {
                notes.add(r.path() + " (" + r.process() + ", agent " + r.agentVersion() + ") has no communicators "
                        + "list: only its leaked communicators are known"
                        + (in.commLeaksNotKept > 0 ? " (the first " + Words.thousands(LEAKS_KEPT_UNLISTED)
                                + " of them; " + Words.thousands(in.commLeaksNotKept) + " more are left out)" : ""));
                parts.truncate(in.from);
                for (ReportFile.LeakEntry l : in.commLeaks) {
                    parts.add(new ReportFile.CommEntry(l.commId(), l.rank(), l.nranks(), l.device(), l.handle(),
                            l.api(), l.thread(), l.createdAt(), null, null, null, true, l.suppression() != null,
                            l.cleanup()), words);
                }
                unlisted.add(process);
            }
            if (r.communicatorsOmitted() > 0) {
                notes.add(r.path() + " (" + r.process() + ") left out its " + r.communicatorsOmitted()
                        + " oldest released communicators (the agent keeps the newest 10,000)");
                omitting.add(process);
            }
            for (int p = in.from; p < parts.size; p++) {
                parts.proc[p] = index;
                if (parts.leaked(p)) {
                    parts.stack[p] = in.stackOf.get(link(parts.handle(p), parts.created(p)));
                }
            }
            return true;
        }

        Job build() {
            return new Job(this);
        }
    }

    private final List<Process> processes;
    private final List<String> notes;
    private final Parts parts;
    private final Vocabulary words;
    private final Stacks stacks;
    private final List<Process> unlisted;
    private final List<Process> omitting;
    /** Communicator c's parts are partOrder[commStart[c], commStart[c + 1]), by rank then creation. */
    private final int[] commStart;
    private final int[] partOrder;
    /** Each part's communicator. */
    private final int[] commOf;
    /** Communicator indexes by creation. */
    private final int[] byCreation;
    private final long[] commCreated;
    private final byte[] commFlags;
    private static final byte LEAKED = 1;
    private static final byte MISSES = 2;
    private static final byte MISSES_RANKS = 4;
    private final int[] missingRanks;
    private final long leakedCount;
    private final Instant start;

    private Job(Builder b) {
        this.processes = List.copyOf(b.processes);
        this.notes = b.stacks.left > 0 ? withNote(b.notes, "the creating stacks of " + Words.thousands(b.stacks.left)
                + " leaked communicators are left out: their distinct stacks passed "
                + (STACK_CHARS_KEPT >> 20) + " M characters") : List.copyOf(b.notes);
        this.parts = b.parts;
        this.words = b.words;
        this.stacks = b.stacks;
        this.unlisted = b.unlisted;
        this.omitting = b.omitting;
        int n = parts.size;
        // the join: each part's communicator, numbered in the order of first appearance
        int[] commOf = new int[n];
        int comms = 0;
        CommIndex index = new CommIndex(parts, n);
        Map<String, Integer> odd = new HashMap<>();
        for (int p = 0; p < n; p++) {
            int len = parts.commLen[p];
            if (len == 0) {
                commOf[p] = comms++;
            } else if (len < 0) {
                Integer c = odd.putIfAbsent(parts.commSide.get(p), comms);
                commOf[p] = c != null ? c : comms++;
            } else {
                int c = index.putIfAbsent(p, comms);
                commOf[p] = c >= 0 ? c : comms++;
            }
        }
        index = null;
        this.commOf = commOf;
        commStart = new int[comms + 1];
        for (int p = 0; p < n; p++) {
            commStart[commOf[p] + 1]++;
        }
        for (int c = 0; c < comms; c++) {
            commStart[c + 1] += commStart[c];
        }
        partOrder = new int[n];
        int[] fill = Arrays.copyOf(commStart, comms);
        for (int p = 0; p < n; p++) {
            partOrder[fill[commOf[p]]++] = p;
        }
        fill = null;
        long[] rankKey = new long[n];
        for (int p = 0; p < n; p++) {
            rankKey[p] = parts.rank[p] == NONE ? Integer.MAX_VALUE : parts.rank[p];
        }
        commCreated = new long[comms];
        for (int c = 0; c < comms; c++) {
            int from = commStart[c];
            int to = commStart[c + 1];
            if (to - from > 1) {
                Sort.byKeys(partOrder, from, to, parts.created, rankKey);
            }
            long min = Long.MAX_VALUE;
            for (int i = from; i < to; i++) {
                min = Math.min(min, parts.created[partOrder[i]]);
            }
            commCreated[c] = min;
        }
        rankKey = null;
        byCreation = new int[comms];
        for (int c = 0; c < comms; c++) {
            byCreation[c] = c;
        }
        Sort.byKeys(byCreation, 0, comms, null, commCreated);
        commFlags = new byte[comms];
        IntList missing = new IntList();
        long leaked = 0;
        for (int i = 0; i < comms; i++) {
            int c = byCreation[i];
            Communicator comm = communicator(c);
            byte f = 0;
            if (comm.isLeaked()) {
                f |= LEAKED;
                leaked++;
            }
            if (!comm.missing().isEmpty()) {
                f |= MISSES;
            }
            if (comm.missesRanks()) {
                f |= MISSES_RANKS;
                missing.add(c);
            }
            commFlags[c] = f;
        }
        missingRanks = missing.toArray();
        leakedCount = leaked;
        Instant s = processes.stream().map(p -> p.report().startedAt()).min(Comparator.naturalOrder())
                .orElse(Instant.EPOCH);
        if (comms > 0 && commCreated[byCreation[0]] < nanos(s)) {
            s = instant(commCreated[byCreation[0]]);
        }
        start = s;
    }

    private static List<String> withNote(List<String> notes, String note) {
        List<String> out = new ArrayList<>(notes);
        out.add(note);
        return List.copyOf(out);
    }

    /** Communicator c as objects, made when asked for: the job keeps columns. */
    private Communicator communicator(int c) {
        int from = commStart[c];
        int to = commStart[c + 1];
        List<Part> list = new ArrayList<>(to - from);
        for (int i = from; i < to; i++) {
            list.add(part(partOrder[i]));
        }
        Integer nranks = null;
        for (Part p : list) {
            Integer n = p.comm().nranks();
            if (n != null && (nranks == null || n > nranks)) {
                nranks = n;
            }
        }
        List<Integer> missing = new ArrayList<>();
        if (nranks != null && nranks <= MAX_MISSING_LISTED) {
            boolean[] seen = new boolean[nranks];
            for (Part p : list) {
                Integer rank = p.comm().rank();
                if (rank != null && rank >= 0 && rank < nranks) {
                    seen[rank] = true;
                }
            }
            for (int rank = 0; rank < nranks; rank++) {
                if (!seen[rank]) {
                    missing.add(rank);
                }
            }
        }
        String uncertain = missing.isEmpty() ? null : uncertainty(list, unlisted, omitting);
        ReportFile.CommEntry first = list.get(0).comm();
        return new Communicator(first.commId(), nranks, first.api(), List.copyOf(list), List.copyOf(missing),
                uncertain);
    }

    private Part part(int p) {
        Process process = processes.get(parts.proc[p]);
        return new Part(process, parts.entry(p, words), parts.stack[p] == -1 ? null : stacks.get(parts.stack[p]));
    }


    /** One report read, with what merge kept of it. */
    record Process(ReportFile report, List<ReportFile.LeakEntry> work, long events, long streams,
            long[] workTimes) {
        String name() {
            return report.process();
        }
    }

    /**
     * One rank's part in a communicator: its process's report, its entry, and the creating stack of
     * its leak entry when leaked (null when the report has no leak entry for it).
     */
    record Part(Process process, ReportFile.CommEntry comm, List<String> stack) {
        ReportFile report() {
            return process.report();
        }

        boolean leaked() {
            return comm.leaked();
        }

        /** Leaked and not accepted by a suppression. */
        boolean counted() {
            return comm.leaked() && !comm.suppressed();
        }

        /** When this rank's part ended on the timeline: its release, or its process's report at exit. */
        Instant end() {
            return comm.releasedAt() != null ? comm.releasedAt() : report().writtenAt();
        }

        /** How long its destroy or abort took, when the report says when it was called; else null. */
        Duration releaseTook() {
            return comm.releaseStartedAt() != null && comm.releasedAt() != null
                    ? Duration.between(comm.releaseStartedAt(), comm.releasedAt()) : null;
        }

        /** The release took {@link #WAITED} or more. */
        boolean releaseWaited() {
            Duration took = releaseTook();
            return took != null && took.compareTo(WAITED) >= 0;
        }
    }

    /**
     * One communicator of the job.
     *
     * @param commId    null when the agent could not read it (then it stands alone)
     * @param nranks    the size its ranks reported, null when unknown
     * @param missing   ranks below nranks that no report has
     * @param uncertain why a missing rank may still be in a report that does not list it; null when none
     */
    record Communicator(String commId, Integer nranks, String api, List<Part> parts, List<Integer> missing,
            String uncertain) {
        List<Part> leaked() {
            return parts.stream().filter(Part::leaked).toList();
        }

        List<Part> released() {
            return parts.stream().filter(p -> !p.leaked()).toList();
        }

        boolean isLeaked() {
            return parts.stream().anyMatch(Part::leaked);
        }

        boolean hasCountedLeak() {
            return parts.stream().anyMatch(Part::counted);
        }

        /** Missing ranks that fail the merge: certain ones. */
        boolean missesRanks() {
            return !missing.isEmpty() && uncertain == null;
        }

        Instant createdAt() {
            return parts.stream().map(p -> p.comm().createdAt()).min(Comparator.naturalOrder()).orElseThrow();
        }

        /** Its last end among its ranks: a release, or a process's exit for a rank that never released it. */
        Instant endedAt() {
            return parts.stream().map(Part::end).max(Comparator.naturalOrder()).orElseThrow();
        }

        String name() {
            return commId != null ? commId : "(no commId) " + parts.get(0).comm().handle();
        }

        /** The top frame of its first leaked rank's creating stack; null when none is known. */
        String site() {
            for (Part p : parts) {
                if (p.leaked() && p.stack() != null && !p.stack().isEmpty()) {
                    return p.stack().get(0);
                }
            }
            return null;
        }

        /** An HTML id and anchor: stable, and only characters an id may hold. */
        String anchor() {
            String raw = name();
            StringBuilder out = new StringBuilder("c-");
            for (int i = 0; i < raw.length(); i++) {
                char c = raw.charAt(i);
                out.append(Character.isLetterOrDigit(c) && c < 0x80 ? c : '_');
            }
            return out.toString();
        }

        /** "rank 0 (pid 101 on a), rank 1 (pid 102 on a)": who has a report, for the missing ranks' line. */
        String present() {
            List<String> out = new ArrayList<>();
            for (Part p : parts) {
                out.add(who(p));
            }
            return String.join(", ", out);
        }
    }


    /** Why a rank no report lists may still be in one: a report without the list, or one that left entries out. */
    private static String uncertainty(List<Part> parts, List<Process> unlisted, List<Process> omitting) {
        List<String> why = new ArrayList<>();
        for (Process p : unlisted) {
            why.add(p.name() + " lists only leaked communicators");
        }
        for (Process p : omitting) {
            if (parts.stream().noneMatch(part -> part.process() == p)) {
                why.add(p.name() + " left out " + p.report().communicatorsOmitted() + " released communicators");
            }
        }
        return why.isEmpty() ? null : String.join("; ", why);
    }

    List<Process> processes() {
        return processes;
    }

    /** Every communicator by creation, each made when asked for (a million are not kept as objects). */
    List<Communicator> communicators() {
        return new Lazy(byCreation, byCreation.length);
    }

    int communicatorCount() {
        return byCreation.length;
    }

    long leakedCount() {
        return leakedCount;
    }

    /** Things the reader should know about the inputs, a line each. */
    List<String> notes() {
        return notes;
    }

    /** Whether any report has a counted leak: a communicator, an event or a stream. */
    boolean anyLeak() {
        return processes.stream().anyMatch(p -> p.report().hasLeaks());
    }

    /** The communicators that name ranks without a report, certainly (they fail the merge). */
    List<Communicator> missingRanks() {
        return new Lazy(missingRanks, missingRanks.length);
    }

    /** The communicators that name ranks without a report, certainly or not, by creation. */
    List<Communicator> missingAny() {
        IntList any = new IntList();
        for (int c : byCreation) {
            if ((commFlags[c] & MISSES) != 0) {
                any.add(c);
            }
        }
        return new Lazy(any.items, any.size);
    }

    /** The earliest agent start among the reports: time zero of the timeline. */
    Instant start() {
        return start;
    }

    /** The latest report written: the end of the timeline. */
    Instant end() {
        return processes.stream().map(p -> p.report().writtenAt()).max(Comparator.naturalOrder()).orElse(start());
    }

    /** Each process's parts by creation, each made when asked for with its communicator: the trace's slices. */
    List<List<Placed>> partsByProcess() {
        int[] count = new int[processes.size() + 1];
        for (int p = 0; p < parts.size; p++) {
            count[parts.proc[p] + 1]++;
        }
        for (int i = 0; i < processes.size(); i++) {
            count[i + 1] += count[i];
        }
        int[] order = new int[parts.size];
        int[] fill = Arrays.copyOf(count, processes.size());
        for (int p = 0; p < parts.size; p++) {
            order[fill[parts.proc[p]]++] = p;
        }
        List<List<Placed>> out = new ArrayList<>();
        for (int i = 0; i < processes.size(); i++) {
            int from = count[i];
            int to = count[i + 1];
            Sort.byKeys(order, from, to, null, parts.created);
            out.add(new AbstractList<>() {
                @Override
                public Placed get(int k) {
                    int p = order[from + k];
                    return new Placed(communicator(commOf[p]), part(p));
                }

                @Override
                public int size() {
                    return to - from;
                }
            });
        }
        return out;
    }

    /** A part with its communicator, for the trace. */
    record Placed(Communicator comm, Part part) {
    }

    /**
     * What the text and the page show one by one: every communicator up to {@link #SHOWN_ALL};
     * past it, the first {@link #SHOWN_ATTENTION} that need a look (leaked first) and the first
     * {@link #SHOWN_RELEASED} released ones; the rest are {@link Shown#groups}.
     */
    Shown shown() {
        int comms = byCreation.length;
        IntList attention = new IntList();
        IntList released = new IntList();
        boolean all = comms <= SHOWN_ALL;
        for (int pass = 0; pass < 3; pass++) {
            for (int i = 0; i < comms; i++) {
                int c = byCreation[i];
                byte f = commFlags[c];
                boolean take = switch (pass) {
                    case 0 -> (f & LEAKED) != 0;
                    case 1 -> (f & LEAKED) == 0 && (f & MISSES) != 0;
                    default -> (f & (LEAKED | MISSES)) == 0;
                };
                if (!take) {
                    continue;
                }
                IntList to = pass < 2 ? attention : released;
                if (all || to.size < (pass < 2 ? SHOWN_ATTENTION : SHOWN_RELEASED)) {
                    to.add(c);
                }
            }
        }
        List<Group> groups = new ArrayList<>();
        long grouped = 0;
        if (!all) {
            boolean[] shown = new boolean[comms];
            for (int i = 0; i < attention.size; i++) {
                shown[attention.items[i]] = true;
            }
            for (int i = 0; i < released.size; i++) {
                shown[released.items[i]] = true;
            }
            Map<List<Object>, Group> byKey = new LinkedHashMap<>();
            Group others = null;
            for (int i = 0; i < comms; i++) {
                int c = byCreation[i];
                if (shown[c]) {
                    continue;
                }
                Communicator comm = communicator(c);
                String state = comm.isLeaked() ? "leaked" : comm.missing().isEmpty() ? "released" : "missing";
                List<Object> key = Arrays.asList(state, comm.api(), comm.nranks(), comm.site());
                Group g = byKey.get(key);
                if (g == null) {
                    if (byKey.size() < MAX_GROUPS) {
                        g = new Group(state, comm.api(), comm.nranks(), comm.site(), comm.name());
                        byKey.put(key, g);
                    } else {
                        if (others == null) {
                            others = new Group("others", null, null, null, comm.name());
                        }
                        g = others;
                    }
                }
                g.count++;
                g.leakedRanks += comm.leaked().size();
                g.missingRanks += comm.missing().size();
                grouped++;
            }
            groups.addAll(byKey.values());
            if (others != null) {
                groups.add(others);
            }
            // those that need a look first, then the largest
            groups.sort(Comparator.comparing((Group g) -> !g.state.equals("leaked"))
                    .thenComparing(g -> !g.state.equals("missing")).thenComparing(g -> -g.count));
        }
        return new Shown(new Lazy(attention.items, attention.size), new Lazy(released.items, released.size),
                List.copyOf(groups), grouped);
    }

    /** What is shown one by one, and the groups of the rest. */
    record Shown(List<Communicator> attention, List<Communicator> released, List<Group> groups, long grouped) {
    }

    /** Communicators not shown one by one that are alike: one state, api, size and creating place. */
    static final class Group {
        final String state;
        final String api;
        final Integer nranks;
        final String site;
        final String example;
        long count;
        long leakedRanks;
        long missingRanks;

        Group(String state, String api, Integer nranks, String site, String example) {
            this.state = state;
            this.api = api;
            this.nranks = nranks;
            this.site = site;
            this.example = example;
        }

        /** "12,345 communicators ncclCommInitRank, 8 ranks, leaked (12,345 ranks' parts), created at X; e.g. 0a1b" */
        String line() {
            StringBuilder out = new StringBuilder(Words.thousands(count)).append(count == 1 ? " communicator" : " communicators");
            if (state.equals("others")) {
                return out.append(" of more kinds than ").append(Words.thousands(MAX_GROUPS))
                        .append(" groups; e.g. ").append(example).toString();
            }
            out.append(' ').append(api);
            if (nranks != null) {
                out.append(", ").append(Words.count(nranks, "rank", "ranks"));
            }
            switch (state) {
                case "leaked" -> out.append(", not released by every rank (").append(Words.thousands(leakedRanks))
                        .append(leakedRanks == 1 ? " rank's part" : " ranks' parts").append(" left alive)");
                case "missing" -> out.append(", released by every rank reported; ").append(Words.thousands(missingRanks))
                        .append(" ranks without a report");
                default -> out.append(", released by every rank");
            }
            if (site != null) {
                out.append(", created at ").append(site);
            }
            return out.append("; e.g. ").append(example).toString();
        }
    }

    /** Communicators by index, made when asked for. */
    private final class Lazy extends AbstractList<Communicator> implements RandomAccess {
        private final int[] comms;
        private final int size;

        Lazy(int[] comms, int size) {
            this.comms = comms;
            this.size = size;
        }

        @Override
        public Communicator get(int i) {
            Objects.checkIndex(i, size);
            return communicator(comms[i]);
        }

        @Override
        public int size() {
            return size;
        }
    }

    private static long link(String handle, Instant createdAt) {
        long h = handle.hashCode() * 0x9E3779B97F4A7C15L;
        for (int i = 0; i < handle.length(); i++) {
            h = (h ^ handle.charAt(i)) * 0x100000001B3L;
        }
        return mix(h ^ mix(createdAt.getEpochSecond() * 1_000_000_007L + createdAt.getNano()));
    }

    private static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    /** Epoch nanoseconds, saturated past the years 1677 and 2262 (then merge's times are off, not wrong in order). */
    static long nanos(Instant t) {
        if (t.getEpochSecond() >= Long.MAX_VALUE / 1_000_000_000L - 1) {
            return Long.MAX_VALUE - 1;
        }
        if (t.getEpochSecond() <= Long.MIN_VALUE / 1_000_000_000L + 1) {
            return Long.MIN_VALUE + 1;
        }
        return t.getEpochSecond() * 1_000_000_000L + t.getNano();
    }

    static Instant instant(long nanos) {
        return Instant.ofEpochSecond(Math.floorDiv(nanos, 1_000_000_000L), Math.floorMod(nanos, 1_000_000_000L));
    }

    /**
     * Each rank's part of every communicator of the job, a column per field (some 80 bytes a part,
     * where the entries as objects took about 1 KB with their leak entries): docs/performance.md,
     * "merge of a million communicators".
     */
    private static final class Parts {
        private static final byte F_LEAKED = 1;
        private static final byte F_SUPPRESSED = 2;
        private static final byte F_ODD_HANDLE = 4;
        int size;
        long[] commBits = new long[64];
        /** 0: no commId; 1 to 16: that many lowercase hex digits in commBits; -1: in commSide. */
        byte[] commLen = new byte[64];
        int[] proc = new int[64];
        int[] rank = new int[64];
        int[] nranks = new int[64];
        int[] device = new int[64];
        long[] created = new long[64];
        long[] releaseStarted = new long[64];
        long[] released = new long[64];
        /** "0x" and lowercase hex without leading zeros, else in handleSide. */
        long[] handleBits = new long[64];
        byte[] flags = new byte[64];
        int[] api = new int[64];
        int[] thread = new int[64];
        int[] releasedBy = new int[64];
        int[] cleanup = new int[64];
        int[] stack = new int[64];
        final Map<Integer, String> commSide = new HashMap<>();
        final Map<Integer, String> handleSide = new HashMap<>();

        void add(ReportFile.CommEntry e, Vocabulary words) {
            if (size == created.length) {
                grow(size + (size >> 1));
            }
            int p = size++;
            String id = e.commId();
            commLen[p] = 0;
            if (id != null) {
                if (isHex(id)) {
                    long bits = Long.parseUnsignedLong(id, 16);
                    commBits[p] = bits;
                    commLen[p] = (byte) id.length();
                } else {
                    commLen[p] = -1;
                    commSide.put(p, id);
                }
            }
            proc[p] = -1;
            rank[p] = e.rank() != null ? e.rank() : NONE;
            nranks[p] = e.nranks() != null ? e.nranks() : NONE;
            device[p] = e.device() != null ? e.device() : NONE;
            created[p] = nanos(e.createdAt());
            releaseStarted[p] = e.releaseStartedAt() != null ? nanos(e.releaseStartedAt()) : NO_TIME;
            released[p] = e.releasedAt() != null ? nanos(e.releasedAt()) : NO_TIME;
            byte f = (byte) ((e.leaked() ? F_LEAKED : 0) | (e.suppressed() ? F_SUPPRESSED : 0));
            String handle = e.handle();
            String digits = handle.startsWith("0x") ? handle.substring(2) : "";
            if (isHex(digits) && handle.equals("0x" + Long.toHexString(Long.parseUnsignedLong(digits, 16)))) {
                handleBits[p] = Long.parseUnsignedLong(digits, 16);
            } else {
                f |= F_ODD_HANDLE;
                handleSide.put(p, handle);
            }
            flags[p] = f;
            api[p] = words.id(e.api());
            thread[p] = words.id(e.thread());
            releasedBy[p] = words.id(e.releasedBy());
            cleanup[p] = words.id(e.cleanup());
            stack[p] = -1;
        }

        /** 1 to 16 lowercase hex digits: a long, given the length. */
        private static boolean isHex(String s) {
            if (s.isEmpty() || s.length() > 16) {
                return false;
            }
            for (int i = 0; i < s.length(); i++) {
                char c = s.charAt(i);
                if (!(c >= '0' && c <= '9' || c >= 'a' && c <= 'f')) {
                    return false;
                }
            }
            return true;
        }

        String commId(int p) {
            int len = commLen[p];
            if (len == 0) {
                return null;
            }
            if (len < 0) {
                return commSide.get(p);
            }
            String hex = Long.toHexString(commBits[p]);
            return hex.length() >= len ? hex : "0".repeat(len - hex.length()) + hex;
        }

        boolean leaked(int p) {
            return (flags[p] & F_LEAKED) != 0;
        }

        Instant created(int p) {
            return instant(created[p]);
        }

        String handle(int p) {
            return (flags[p] & F_ODD_HANDLE) != 0 ? handleSide.get(p) : "0x" + Long.toHexString(handleBits[p]);
        }

        ReportFile.CommEntry entry(int p, Vocabulary words) {
            return new ReportFile.CommEntry(commId(p), integer(rank[p]), integer(nranks[p]), integer(device[p]),
                    handle(p), words.get(api[p]), words.get(thread[p]), created(p),
                    releaseStarted[p] == NO_TIME ? null : instant(releaseStarted[p]),
                    released[p] == NO_TIME ? null : instant(released[p]), words.get(releasedBy[p]), leaked(p),
                    (flags[p] & F_SUPPRESSED) != 0, words.get(cleanup[p]));
        }

        private static Integer integer(int v) {
            return v == NONE ? null : v;
        }

        void truncate(int to) {
            for (int p = to; p < size; p++) {
                commSide.remove(p);
                handleSide.remove(p);
            }
            size = Math.min(size, to);
        }

        private void grow(int n) {
            commBits = Arrays.copyOf(commBits, n);
            commLen = Arrays.copyOf(commLen, n);
            proc = Arrays.copyOf(proc, n);
            rank = Arrays.copyOf(rank, n);
            nranks = Arrays.copyOf(nranks, n);
            device = Arrays.copyOf(device, n);
            created = Arrays.copyOf(created, n);
            releaseStarted = Arrays.copyOf(releaseStarted, n);
            released = Arrays.copyOf(released, n);
            handleBits = Arrays.copyOf(handleBits, n);
            flags = Arrays.copyOf(flags, n);
            api = Arrays.copyOf(api, n);
            thread = Arrays.copyOf(thread, n);
            releasedBy = Arrays.copyOf(releasedBy, n);
            cleanup = Arrays.copyOf(cleanup, n);
            stack = Arrays.copyOf(stack, n);
        }
    }

    /** The words of the columns (apis, threads, how a communicator ended), each kept once. */
    private static final class Vocabulary {
        private final Map<String, Integer> ids = new HashMap<>();
        private final List<String> words = new ArrayList<>(List.of("…"));

        int id(String word) {
            if (word == null) {
                return -1;
            }
            Integer id = ids.get(word);
            if (id != null) {
                return id;
            }
            if (words.size() == MAX_WORDS) {
                return 0; // "…"
            }
            ids.put(word, words.size());
            words.add(word);
            return words.size() - 1;
        }

        String get(int id) {
            return id < 0 ? null : words.get(id);
        }
    }

    /** Creating stacks, each distinct one kept once (a leaked loop's million leaks share one). */
    private static final class Stacks {
        private final Map<List<String>, Integer> ids = new HashMap<>();
        private final List<List<String>> stacks = new ArrayList<>();
        private long chars;
        long left;

        int id(List<String> stack) {
            Integer id = ids.get(stack);
            if (id != null) {
                return id;
            }
            long size = 0;
            for (String frame : stack) {
                size += frame.length() + 16;
            }
            if (chars + size > STACK_CHARS_KEPT) {
                left++;
                return -2;
            }
            chars += size;
            ids.put(stack, stacks.size());
            stacks.add(stack);
            return stacks.size() - 1;
        }

        List<String> get(int id) {
            return id < 0 ? List.of() : stacks.get(id);
        }
    }

    /** long to int, open addressing; -1 for a key not there. */
    private static final class LongIntMap {
        private long[] keys = new long[16];
        private int[] values = new int[16];
        private boolean[] used = new boolean[16];
        private int size;

        void put(long key, int value) {
            if (size * 2 >= keys.length) {
                long[] k = keys;
                int[] v = values;
                boolean[] u = used;
                keys = new long[k.length * 2];
                values = new int[k.length * 2];
                used = new boolean[k.length * 2];
                size = 0;
                for (int i = 0; i < k.length; i++) {
                    if (u[i]) {
                        put(k[i], v[i]);
                    }
                }
            }
            int mask = keys.length - 1;
            int i = (int) mix(key) & mask;
            while (used[i] && keys[i] != key) {
                i = (i + 1) & mask;
            }
            if (!used[i]) {
                used[i] = true;
                keys[i] = key;
                size++;
            }
            values[i] = value;
        }

        int get(long key) {
            int mask = keys.length - 1;
            int i = (int) mix(key) & mask;
            while (used[i]) {
                if (keys[i] == key) {
                    return values[i];
                }
                i = (i + 1) & mask;
            }
            return -1;
        }
    }

    /** commId (as bits and length) to the communicator's number, open addressing over the parts' columns. */
    private static final class CommIndex {
        private final Parts parts;
        private final int[] slotPart;
        private final int[] slotComm;

        CommIndex(Parts parts, int n) {
            this.parts = parts;
            int cap = Integer.highestOneBit(Math.max(16, n) * 2 - 1) << 1;
            slotPart = new int[cap];
            slotComm = new int[cap];
        }

        /** The communicator of part p's commId, or -1 when it is new (and then numbered {@code comm}). */
        int putIfAbsent(int p, int comm) {
            long bits = parts.commBits[p];
            byte len = parts.commLen[p];
            int mask = slotPart.length - 1;
            int i = (int) mix(bits * 17 + len) & mask;
            while (slotPart[i] != 0) {
                int q = slotPart[i] - 1;
                if (parts.commBits[q] == bits && parts.commLen[q] == len) {
                    return slotComm[i];
                }
                i = (i + 1) & mask;
            }
            slotPart[i] = p + 1;
            slotComm[i] = comm;
            return -1;
        }
    }

    private static final class IntList {
        int[] items = new int[16];
        int size;

        void add(int v) {
            if (size == items.length) {
                items = Arrays.copyOf(items, size * 2);
            }
            items[size++] = v;
        }

        int[] toArray() {
            return Arrays.copyOf(items, size);
        }
    }

    /** A stable merge sort of indexes by one or two long keys, without boxing. */
    private static final class Sort {
        /** Sorts a[from, to) by first[a[i]] (when not null), then by second[a[i]]; stable. */
        static void byKeys(int[] a, int from, int to, long[] second, long[] first) {
            if (to - from < 2) {
                return;
            }
            int[] tmp = new int[to - from];
            sort(a, from, to, tmp, first, second);
        }

        private static void sort(int[] a, int from, int to, int[] tmp, long[] k1, long[] k2) {
            if (to - from <= 16) {
                for (int i = from + 1; i < to; i++) {
                    int x = a[i];
                    int j = i - 1;
                    while (j >= from && less(x, a[j], k1, k2)) {
                        a[j + 1] = a[j];
                        j--;
                    }
                    a[j + 1] = x;
                }
                return;
            }
            int mid = (from + to) >>> 1;
            sort(a, from, mid, tmp, k1, k2);
            sort(a, mid, to, tmp, k1, k2);
            if (!less(a[mid], a[mid - 1], k1, k2)) {
                return;
            }
            System.arraycopy(a, from, tmp, 0, mid - from);
            int i = 0;
            int n = mid - from;
            int j = mid;
            int k = from;
            while (i < n && j < to) {
                a[k++] = less(a[j], tmp[i], k1, k2) ? a[j++] : tmp[i++];
            }
            while (i < n) {
                a[k++] = tmp[i++];
            }
        }

        private static boolean less(int x, int y, long[] k1, long[] k2) {
            if (k1[x] != k1[y]) {
                return k1[x] < k1[y];
            }
            return k2 != null && k2[x] < k2[y];
        }
    }

    /** "rank 1 (pid 4242 on gpu-01)", or the handle when the rank is unknown. */
    static String who(Part p) {
        return (p.comm().rank() != null ? "rank " + p.comm().rank() : "handle " + OneLine.of(p.comm().handle()))
                + " (" + OneLine.of(p.report().process()) + ")";
    }

    static String ranks(List<Part> parts) {
        List<String> out = new ArrayList<>();
        for (Part p : parts) {
            out.add(p.comm().rank() != null ? String.valueOf(p.comm().rank()) : "?");
        }
        return String.join(", ", out);
    }

    static String ints(List<Integer> ints) {
        List<String> out = new ArrayList<>();
        ints.forEach(i -> out.add(String.valueOf(i)));
        return String.join(", ", out);
    }

    /**
     * What the reports of a communicator's other ranks say about its missing ranks: that the
     * communicator has them, whether its destroys waited (as for a peer that is gone), how cleanup
     * ended it.
     */
    static String aboutMissing(Communicator c) {
        StringBuilder out = new StringBuilder();
        out.append(c.missing().size() == 1 ? "rank " : "ranks ").append(ints(c.missing()))
                .append(" wrote no report: ")
                .append(c.present()).append(c.parts().size() == 1 ? " lists" : " list").append(" the communicator with ")
                .append(Words.count(c.nranks(), "rank", "ranks"));
        List<String> said = new ArrayList<>();
        for (Part p : c.parts()) {
            String rank = p.comm().rank() != null ? "rank " + p.comm().rank() : "handle " + p.comm().handle();
            if (p.releaseWaited()) {
                said.add(rank + "'s " + p.comm().releasedBy() + " waited " + Words.duration(p.releaseTook()));
            }
            if (p.leaked() && p.comm().cleanup() != null && !p.comm().cleanup().equals("none")) {
                said.add(rank + " was " + p.comm().cleanup() + " by cleanup at exit");
            }
        }
        if (!said.isEmpty()) {
            out.append("; ").append(String.join(", ", said));
        }
        out.append(": a process killed (SIGKILL, a crash) or run without the agent writes none");
        return out.toString();
    }
}
