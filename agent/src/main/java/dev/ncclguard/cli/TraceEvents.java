package dev.ncclguard.cli;

import java.io.IOException;
import java.io.OutputStream;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The job as Chrome trace-event JSON (the "JSON Object Format" of the Trace Event Format), which
 * Perfetto (ui.perfetto.dev) and chrome://tracing open: a process per report (its pid, named
 * "pid N on HOST"), a track per rank (a thread), a complete slice per communicator from its
 * creation to its release or its process's exit, coloured by how it ended, the destroy nested in
 * it when the report says when it was called, instants at each process's exit and at each cleanup,
 * and the creating stack in the slice's args. Ranks no report has get tracks of their own under a
 * process "ranks without a report". Times are microseconds from the earliest agent start.
 */
final class TraceEvents {
    /** Chrome's reserved colour names (trace-viewer's color scheme); Perfetto picks its own. */
    static final String RELEASED_COLOR = "good";
    static final String LEAKED_COLOR = "terrible";
    static final String MISSING_COLOR = "grey";
    /** Tracks of one rank: slices that overlap without nesting go on the next one. */
    private static final int LANES_PER_RANK = 64;

    private TraceEvents() {
    }

    private record Slice(Job.Communicator comm, Job.Part part, Integer missingRank, Instant from, Instant to) {
    }

    static void write(Job job, OutputStream sink) throws IOException {
        Instant t0 = job.start();
        JsonWriter w = new JsonWriter(sink, false);
        w.beginObject();
        w.name("displayTimeUnit").value("ms");
        w.name("otherData").beginObject().name("source").value("ncclguard merge " + Cli.Version.line())
                .name("timeZero").value(t0.toString()).endObject();
        w.name("traceEvents").beginArray();

        Map<Job.Process, Integer> pids = tracePids(job.processes());
        Map<Job.Process, List<Slice>> byProcess = new LinkedHashMap<>();
        job.processes().forEach(p -> byProcess.put(p, new ArrayList<>()));
        List<Slice> missing = new ArrayList<>();
        for (Job.Communicator c : job.communicators()) {
            for (Job.Part part : c.parts()) {
                byProcess.get(part.process()).add(new Slice(c, part, null, part.comm().createdAt(), part.end()));
            }
            for (int rank : c.missing()) {
                missing.add(new Slice(c, null, rank, c.createdAt(), c.endedAt()));
            }
        }
        int sort = 0;
        for (Map.Entry<Job.Process, List<Slice>> e : byProcess.entrySet()) {
            Job.Process p = e.getKey();
            int pid = pids.get(p);
            metadata(w, "process_name", pid, null, "name", p.name() + " (" + p.report().path().getFileName() + ")");
            metadata(w, "process_sort_index", pid, null, "sort_index", sort++);
            tracks(w, pid, e.getValue(), t0);
            w.beginObject().name("name").value("exit (report written)").name("cat").value("process").name("ph")
                    .value("i").name("s").value("p").name("ts").value(micros(t0, p.report().writtenAt()))
                    .name("pid").value(pid).name("tid").value(0)
                    .name("args").beginObject().name("leaks").value(p.report().summary().leaks())
                    .name("pendingEvents").value(p.events()).name("unsyncedStreams").value(p.streams())
                    .endObject().endObject();
        }
        if (!missing.isEmpty()) {
            int pid = pids.size() + 1_000_000;
            metadata(w, "process_name", pid, null, "name", "ranks without a report");
            metadata(w, "process_sort_index", pid, null, "sort_index", sort);
            tracks(w, pid, missing, t0);
        }
        w.endArray();
        w.endObject();
        w.finish();
    }

    /** The real pid where it is unique among the reports (in containers every JVM may be pid 1). */
    private static Map<Job.Process, Integer> tracePids(List<Job.Process> processes) {
        Map<Long, Integer> seen = new HashMap<>();
        processes.forEach(p -> seen.merge(p.report().pid(), 1, Integer::sum));
        Map<Job.Process, Integer> out = new HashMap<>();
        int synthetic = 0;
        for (Job.Process p : processes) {
            long pid = p.report().pid();
            boolean unique = seen.get(pid) == 1 && pid > 0 && pid < 1_000_000;
            out.put(p, unique ? (int) pid : 2_000_000 + synthetic++);
        }
        return out;
    }

    /** One track per rank (more when its communicators overlap without nesting), and the slices on them. */
    private static void tracks(JsonWriter w, int pid, List<Slice> slices, Instant t0) throws IOException {
        slices.sort(Comparator.comparing(Slice::from));
        Map<Integer, List<Instant>> laneEnds = new HashMap<>();
        Map<Integer, Boolean> named = new HashMap<>();
        for (Slice s : slices) {
            Integer rank = s.missingRank != null ? s.missingRank : s.part.comm().rank();
            int base = rank == null ? 1 : (rank + 2) * LANES_PER_RANK;
            List<Instant> ends = laneEnds.computeIfAbsent(base, k -> new ArrayList<>());
            int lane = 0;
            while (lane < ends.size() && ends.get(lane).isAfter(s.from)) {
                lane++;
            }
            if (lane == ends.size()) {
                ends.add(s.to);
            } else {
                ends.set(lane, s.to);
            }
            lane = Math.min(lane, LANES_PER_RANK - 1);
            int tid = base + lane;
            if (named.putIfAbsent(tid, true) == null) {
                String name = (rank == null ? "rank ?" : "rank " + rank) + (lane > 0 ? " (" + (lane + 1) + ")" : "");
                metadata(w, "thread_name", pid, tid, "name", name);
                metadata(w, "thread_sort_index", pid, tid, "sort_index", tid);
            }
            slice(w, pid, tid, s, t0);
        }
    }

    private static void slice(JsonWriter w, int pid, int tid, Slice s, Instant t0) throws IOException {
        Job.Communicator c = s.comm;
        long ts = micros(t0, s.from);
        long dur = Math.max(1, micros(t0, s.to) - ts);
        String state = s.part == null ? "missing" : s.part.leaked() ? "leaked" : "released";
        w.beginObject();
        w.name("name").value("communicator " + c.name() + (s.part == null ? " (no report)" : ""));
        w.name("cat").value("communicator," + state);
        w.name("ph").value("X");
        w.name("ts").value(ts);
        w.name("dur").value(dur);
        w.name("pid").value(pid);
        w.name("tid").value(tid);
        w.name("cname").value(s.part == null ? MISSING_COLOR : s.part.leaked() ? LEAKED_COLOR : RELEASED_COLOR);
        w.name("args").beginObject();
        w.name("state").value(state);
        w.name("commId").value(c.commId());
        w.name("api").value(c.api());
        if (c.nranks() != null) {
            w.name("nranks").value(c.nranks());
        }
        if (s.part == null) {
            w.name("rank").value(s.missingRank);
            w.name("note").value(Job.aboutMissing(c));
        } else {
            ReportFile.CommEntry e = s.part.comm();
            if (e.rank() != null) {
                w.name("rank").value(e.rank());
            }
            if (e.device() != null) {
                w.name("device").value(e.device());
            }
            w.name("handle").value(e.handle());
            w.name("thread").value(e.thread());
            if (e.releasedBy() != null) {
                w.name("releasedBy").value(e.releasedBy());
            }
            if (s.part.releaseTook() != null) {
                w.name("releaseTookMs").value(s.part.releaseTook().toMillis());
            }
            if (e.cleanup() != null) {
                w.name("cleanup").value(e.cleanup());
            }
            if (e.suppressed()) {
                w.name("suppressed").value(true);
            }
            if (s.part.leak() != null) {
                w.name("stack").strings(s.part.leak().stack());
            }
        }
        w.endObject();
        w.endObject();
        if (s.part != null && s.part.releaseTook() != null) {
            // the destroy nested in its communicator's slice: visible when it waited for peers
            long start = Math.max(ts, micros(t0, s.part.comm().releaseStartedAt()));
            w.beginObject().name("name").value(s.part.comm().releasedBy()).name("cat").value("release")
                    .name("ph").value("X").name("ts").value(start)
                    .name("dur").value(Math.max(0, Math.min(ts + dur, micros(t0, s.part.comm().releasedAt())) - start))
                    .name("pid").value(pid).name("tid").value(tid).endObject();
        }
        if (s.part != null && s.part.leaked() && s.part.comm().cleanup() != null
                && !s.part.comm().cleanup().equals("none")) {
            w.beginObject().name("name").value("cleanup: " + s.part.comm().cleanup()).name("cat").value("cleanup")
                    .name("ph").value("i").name("s").value("t").name("ts").value(ts + dur)
                    .name("pid").value(pid).name("tid").value(tid).endObject();
        }
    }

    private static void metadata(JsonWriter w, String name, int pid, Integer tid, String key, Object value)
            throws IOException {
        w.beginObject().name("name").value(name).name("ph").value("M").name("ts").value(0).name("pid").value(pid);
        if (tid != null) {
            w.name("tid").value(tid);
        } else {
            w.name("tid").value(0);
        }
        w.name("args").beginObject().name(key).any(value).endObject();
        w.endObject();
    }

    private static long micros(Instant t0, Instant at) {
        Duration d = Duration.between(t0, at);
        return Math.max(0, d.getSeconds() * 1_000_000 + d.getNano() / 1000);
    }
}
