package dev.ncclguard.cli;

import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeSet;

/**
 * The reports of one job joined: each communicator matched across ranks and processes by its
 * commId (the same on every rank, SPEC "details.commId"), with each rank's part: released, how
 * and when, or left alive at exit. The rank that left it alive is the one whose exit its peers'
 * NCCL proxy threads saw as a dropped connection.
 */
final class Job {
    /** Ranks above this are not listed one by one as missing. */
    private static final int MAX_MISSING_LISTED = 1024;

    /** One rank's part in a communicator: its process's report, its entry, its leak entry if leaked. */
    record Part(ReportFile report, ReportFile.CommEntry comm, ReportFile.LeakEntry leak) {
        boolean leaked() {
            return comm.leaked();
        }

        /** Leaked and not accepted by a suppression. */
        boolean counted() {
            return comm.leaked() && !comm.suppressed();
        }

        /** When this rank's part ended on the timeline: its release, or its process's report at exit. */
        Instant end() {
            return comm.releasedAt() != null ? comm.releasedAt() : report.writtenAt();
        }
    }

    /**
     * One communicator of the job.
     *
     * @param commId  null when the agent could not read it (then it stands alone)
     * @param nranks  the size its ranks reported, null when unknown
     * @param missing ranks below nranks that no report has
     */
    record Communicator(String commId, Integer nranks, String api, List<Part> parts, List<Integer> missing) {
        List<Part> leaked() {
            return parts.stream().filter(Part::leaked).toList();
        }

        List<Part> released() {
            return parts.stream().filter(p -> !p.leaked()).toList();
        }

        boolean hasCountedLeak() {
            return parts.stream().anyMatch(Part::counted);
        }

        Instant createdAt() {
            return parts.stream().map(p -> p.comm().createdAt()).min(Comparator.naturalOrder()).orElseThrow();
        }

        String name() {
            return commId != null ? commId : "(no commId) " + parts.get(0).comm().handle();
        }
    }

    private final List<ReportFile> reports;
    private final List<Communicator> communicators;
    private final List<String> notes;

    private Job(List<ReportFile> reports, List<Communicator> communicators, List<String> notes) {
        this.reports = reports;
        this.communicators = communicators;
        this.notes = notes;
    }

    static Job of(List<ReportFile> reports) {
        Map<String, List<Part>> byId = new LinkedHashMap<>();
        List<String> notes = new ArrayList<>();
        Map<ReportFile, ReportFile> byContent = new LinkedHashMap<>();
        List<ReportFile> distinct = new ArrayList<>();
        for (ReportFile r : reports) {
            // a report copied under another name would show each of its ranks twice; equal content is a copy
            ReportFile same = byContent.putIfAbsent(r.withPath(null), r);
            if (same != null) {
                notes.add(r.path() + " is the same report as " + same.path() + " (" + r.process() + "): read once");
                continue;
            }
            distinct.add(r);
            List<ReportFile.CommEntry> comms = r.communicators();
            if (comms == null) {
                notes.add(r.path() + " (" + r.process() + ", agent " + r.agentVersion() + ") has no communicators "
                        + "list: only its leaked communicators are known");
                comms = fromLeaks(r);
            }
            for (ReportFile.CommEntry c : comms) {
                String key = c.commId() != null ? c.commId()
                        : r.host() + "/" + r.pid() + "/" + c.handle() + "/" + c.createdAt();
                byId.computeIfAbsent(key, k -> new ArrayList<>()).add(new Part(r, c, leakOf(r, c)));
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
            out.add(new Communicator(first.commId(), nranks, first.api(), List.copyOf(parts), List.copyOf(missing)));
        }
        out.sort(Comparator.comparing(Communicator::createdAt));
        return new Job(List.copyOf(distinct), List.copyOf(out), List.copyOf(notes));
    }

    /** A report that predates the communicators list: its leaked communicators are all it tells. */
    private static List<ReportFile.CommEntry> fromLeaks(ReportFile r) {
        List<ReportFile.CommEntry> comms = new ArrayList<>();
        addLeakedComms(r.leaks(), false, comms);
        addLeakedComms(r.suppressed(), true, comms);
        return comms;
    }

    private static void addLeakedComms(List<ReportFile.LeakEntry> leaks, boolean suppressed,
            List<ReportFile.CommEntry> out) {
        for (ReportFile.LeakEntry l : leaks) {
            if (l.kind().equals("comm")) {
                out.add(new ReportFile.CommEntry(l.commId(), l.rank(), l.nranks(),
                        ReportFile.integer(l.details().get("device")), l.handle(), l.api(), l.thread(), l.createdAt(),
                        null, null, true, suppressed, l.cleanup()));
            }
        }
    }

    /** The leak entry of a leaked communicator, for its creating stack. */
    private static ReportFile.LeakEntry leakOf(ReportFile r, ReportFile.CommEntry c) {
        if (!c.leaked()) {
            return null;
        }
        for (List<ReportFile.LeakEntry> list : List.of(r.leaks(), r.suppressed())) {
            for (ReportFile.LeakEntry l : list) {
                if (l.kind().equals("comm") && l.handle().equals(c.handle()) && l.createdAt().equals(c.createdAt())) {
                    return l;
                }
            }
        }
        return null;
    }

    List<ReportFile> reports() {
        return reports;
    }

    List<Communicator> communicators() {
        return communicators;
    }

    /** Things the reader should know about the inputs, a line each. */
    List<String> notes() {
        return notes;
    }

    /** The earliest agent start among the reports: time zero of the timeline. */
    Instant start() {
        Instant start = reports.stream().map(ReportFile::startedAt).min(Comparator.naturalOrder()).orElse(Instant.EPOCH);
        for (Communicator c : communicators) {
            if (c.createdAt().isBefore(start)) {
                start = c.createdAt();
            }
        }
        return start;
    }

    /** The latest report written: the end of the timeline. */
    Instant end() {
        return reports.stream().map(ReportFile::writtenAt).max(Comparator.naturalOrder()).orElse(start());
    }

    /** "rank 1 (pid 4242 on gpu-01)", or the handle when the rank is unknown. */
    static String who(Part p) {
        return (p.comm().rank() != null ? "rank " + p.comm().rank() : "handle " + Words.clean(p.comm().handle()))
                + " (" + Words.clean(p.report().process()) + ")";
    }

    static String ranks(List<Part> parts) {
        List<String> out = new ArrayList<>();
        for (Part p : parts) {
            out.add(p.comm().rank() != null ? String.valueOf(p.comm().rank()) : "?");
        }
        return String.join(", ", out);
    }
}
