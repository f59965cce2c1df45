package dev.ncclguard.cli;

import dev.ncclguard.catalog.Kind;
import dev.ncclguard.log.OneLine;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeSet;

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
     * What merge keeps of one report while it is streamed: its communicators, the leak entries of
     * its leaked communicators (for their stacks), and of its events and streams the count, the
     * creation times (8 bytes each, for the timeline's marks) and the first few in full.
     */
    static final class Input implements ReportFile.Entries {
        final List<ReportFile.CommEntry> comms = new ArrayList<>();
        final List<ReportFile.LeakEntry> commLeaks = new ArrayList<>();
        final List<ReportFile.LeakEntry> work = new ArrayList<>();
        long events;
        long streams;
        private long[] workTimes = new long[64];
        private int workTimeCount;

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
                commLeaks.add(leak);
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
            comms.add(comm);
        }

        long[] workTimes() {
            long[] t = Arrays.copyOf(workTimes, workTimeCount);
            Arrays.sort(t);
            return t;
        }
    }

    /** One report read, with what merge kept of it. */
    record Process(ReportFile report, List<ReportFile.LeakEntry> work, long events, long streams,
            long[] workTimes) {
        String name() {
            return report.process();
        }
    }

    /** One rank's part in a communicator: its process's report, its entry, its leak entry if leaked. */
    record Part(Process process, ReportFile.CommEntry comm, ReportFile.LeakEntry leak) {
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

    private final List<Process> processes;
    private final List<Communicator> communicators;
    private final List<String> notes;

    private Job(List<Process> processes, List<Communicator> communicators, List<String> notes) {
        this.processes = processes;
        this.communicators = communicators;
        this.notes = notes;
    }

    /** A report read and what merge kept of it, as {@link #of} takes them. */
    record Read(ReportFile report, Input kept) {
    }

    static Job of(List<Read> reads) {
        Map<String, List<Part>> byId = new LinkedHashMap<>();
        List<String> notes = new ArrayList<>();
        Map<ReportFile.Identity, ReportFile> byIdentity = new HashMap<>();
        List<Process> processes = new ArrayList<>();
        List<Process> unlisted = new ArrayList<>();
        List<Process> omitting = new ArrayList<>();
        for (Read read : reads) {
            ReportFile r = read.report();
            // a report copied under another name would show each of its ranks twice
            ReportFile same = byIdentity.putIfAbsent(r.identity(), r);
            if (same != null) {
                notes.add(r.path() + " is the same report as " + same.path() + " (" + r.process() + "): read once");
                continue;
            }
            Input in = read.kept();
            Process process = new Process(r, List.copyOf(in.work), in.events, in.streams, in.workTimes());
            processes.add(process);
            List<ReportFile.CommEntry> comms = in.comms;
            if (!r.communicatorsListed()) {
                notes.add(r.path() + " (" + r.process() + ", agent " + r.agentVersion() + ") has no communicators "
                        + "list: only its leaked communicators are known");
                comms = fromLeaks(in.commLeaks);
                unlisted.add(process);
            }
            if (r.communicatorsOmitted() > 0) {
                notes.add(r.path() + " (" + r.process() + ") left out its " + r.communicatorsOmitted()
                        + " oldest released communicators (the agent keeps the newest 10,000)");
                omitting.add(process);
            }
            Map<String, ReportFile.LeakEntry> leaksByHandle = new HashMap<>();
            for (ReportFile.LeakEntry l : in.commLeaks) {
                leaksByHandle.put(l.handle() + "@" + l.createdAt(), l);
            }
            for (ReportFile.CommEntry c : comms) {
                String key = c.commId() != null ? c.commId()
                        : r.host() + "/" + r.pid() + "/" + c.handle() + "/" + c.createdAt();
                ReportFile.LeakEntry leak = c.leaked() ? leaksByHandle.get(c.handle() + "@" + c.createdAt()) : null;
                byId.computeIfAbsent(key, k -> new ArrayList<>()).add(new Part(process, c, leak));
            }
        }
        List<Communicator> out = new ArrayList<>();
        for (List<Part> parts : byId.values()) {
            parts.sort(Comparator.comparing((Part p) -> p.comm().rank() == null ? Integer.MAX_VALUE : p.comm().rank())
                    .thenComparing(p -> p.comm().createdAt()));
            ReportFile.CommEntry first = parts.get(0).comm();
            Integer nranks = parts.stream().map(p -> p.comm().nranks()).filter(Objects::nonNull)
                    .max(Comparator.naturalOrder()).orElse(null);
            List<Integer> missing = new ArrayList<>();
            if (nranks != null && nranks <= MAX_MISSING_LISTED) {
                TreeSet<Integer> seen = new TreeSet<>();
                parts.forEach(p -> {
                    if (p.comm().rank() != null) {
                        seen.add(p.comm().rank());
                    }
                });
                for (int rank = 0; rank < nranks; rank++) {
                    if (!seen.contains(rank)) {
                        missing.add(rank);
                    }
                }
            }
            String uncertain = null;
            if (!missing.isEmpty()) {
                uncertain = uncertainty(parts, unlisted, omitting);
            }
            out.add(new Communicator(first.commId(), nranks, first.api(), List.copyOf(parts), List.copyOf(missing),
                    uncertain));
        }
        out.sort(Comparator.comparing(Communicator::createdAt));
        return new Job(List.copyOf(processes), List.copyOf(out), List.copyOf(notes));
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

    /** A report that predates the communicators list: its leaked communicators are all it tells. */
    private static List<ReportFile.CommEntry> fromLeaks(List<ReportFile.LeakEntry> leaks) {
        List<ReportFile.CommEntry> comms = new ArrayList<>();
        for (ReportFile.LeakEntry l : leaks) {
            comms.add(new ReportFile.CommEntry(l.commId(), l.rank(), l.nranks(), l.device(), l.handle(), l.api(),
                    l.thread(), l.createdAt(), null, null, null, true, l.suppression() != null, l.cleanup()));
        }
        return comms;
    }

    List<Process> processes() {
        return processes;
    }

    List<Communicator> communicators() {
        return communicators;
    }

    /** Things the reader should know about the inputs, a line each. */
    List<String> notes() {
        return notes;
    }

    /** Whether any report has a counted leak: a communicator, an event or a stream. */
    boolean anyLeak() {
        return processes.stream().anyMatch(p -> p.report().hasLeaks());
    }

    List<Communicator> missingRanks() {
        return communicators.stream().filter(Communicator::missesRanks).toList();
    }

    /** The earliest agent start among the reports: time zero of the timeline. */
    Instant start() {
        Instant start = processes.stream().map(p -> p.report().startedAt()).min(Comparator.naturalOrder())
                .orElse(Instant.EPOCH);
        for (Communicator c : communicators) {
            if (c.createdAt().isBefore(start)) {
                start = c.createdAt();
            }
        }
        return start;
    }

    /** The latest report written: the end of the timeline. */
    Instant end() {
        return processes.stream().map(p -> p.report().writtenAt()).max(Comparator.naturalOrder()).orElse(start());
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
