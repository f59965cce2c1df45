package dev.ncclguard.cli;

import dev.ncclguard.json.JsonOut;
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
        JsonOut w = new JsonOut(sink, JsonOut.Layout.ELEMENT_LINES);
        w.beginObject();
        w.name("displayTimeUnit").string("ms");
        w.name("otherData").beginObject().name("source").string("ncclguard merge " + Cli.Version.line())
                .name("timeZero").string(t0.toString()).endObject();
        w.name("traceEvents").beginArray();

        Map<Job.Process, Integer> pids = tracePids(job.processes());
        List<List<Job.Placed>> byProcess = job.partsByProcess();
        int sort = 0;
        for (int i = 0; i < job.processes().size(); i++) {
            Job.Process p = job.processes().get(i);
            int pid = pids.get(p);
            metadata(w, "process_name", pid, null, "name", p.name() + " (" + p.report().path().getFileName() + ")");
            metadata(w, "process_sort_index", pid, null, "sort_index", sort++);
            List<Job.Placed> placed = byProcess.get(i);
            tracks(w, pid, new java.util.AbstractList<Slice>() {
                @Override
                public Slice get(int k) {
                    Job.Placed x = placed.get(k);
                    return new Slice(x.comm(), x.part(), null, x.part().comm().createdAt(), x.part().end());
                }

                @Override
                public int size() {
                    return placed.size();
                }
            }, t0);
            w.element().beginObject().name("name").string("exit (report written)").name("cat").string("process")
                    .name("ph").string("i").name("s").string("p").name("ts").number(micros(t0, p.report().writtenAt()))
                    .name("pid").number(pid).name("tid").number(0)
                    .name("args").beginObject().name("leaks").number(p.report().summary().leaks())
                    .name("pendingEvents").number(p.events()).name("unsyncedStreams").number(p.streams())
                    .endObject().endObject();
        }
        // communicators by creation: their missing ranks' slices come in the order tracks wants
        List<Job.Communicator> missingAny = job.missingAny();
        Iterable<Slice> missing = () -> missingAny.stream()
                .flatMap(c -> c.missing().stream().map(rank -> new Slice(c, null, rank, c.createdAt(), c.endedAt())))
                .iterator();
        if (!missingAny.isEmpty()) {
            int pid = pids.size() + 1_000_000;
            metadata(w, "process_name", pid, null, "name", "ranks without a report");
            metadata(w, "process_sort_index", pid, null, "sort_index", sort);
            tracks(w, pid, missing, t0);
        }
        w.endArray();
        w.endObject();
        w.newline();
        w.flush();
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

    /**
     * One track per rank (more when its communicators overlap without nesting), and the slices on
     * them; the slices come by their start.
     */
    private static void tracks(JsonOut w, int pid, Iterable<Slice> slices, Instant t0) throws IOException {
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
            if (lane < ends.size()) {
                ends.set(lane, s.to);
            } else if (lane < LANES_PER_RANK) {
                ends.add(s.to);
            } else {
                // every track busy: the last one takes the rest (a scan of a few, not of every slice before)
                lane = LANES_PER_RANK - 1;
                if (s.to.isAfter(ends.get(lane))) {
                    ends.set(lane, s.to);
                }
            }
            int tid = base + lane;
            if (named.putIfAbsent(tid, true) == null) {
                String name = (rank == null ? "rank ?" : "rank " + rank) + (lane > 0 ? " (" + (lane + 1) + ")" : "");
                metadata(w, "thread_name", pid, tid, "name", name);
                metadata(w, "thread_sort_index", pid, tid, "sort_index", tid);
            }
            slice(w, pid, tid, s, t0);
        }
    }

    private static void slice(JsonOut w, int pid, int tid, Slice s, Instant t0) throws IOException {
        Job.Communicator c = s.comm;
        long ts = micros(t0, s.from);
        long dur = Math.max(1, micros(t0, s.to) - ts);
        String state = s.part == null ? "missing" : s.part.leaked() ? "leaked" : "released";
        w.element().beginObject();
        w.name("name").string("communicator " + c.name() + (s.part == null ? " (no report)" : ""));
        w.name("cat").string("communicator," + state);
        w.name("ph").string("X");
        w.name("ts").number(ts);
        w.name("dur").number(dur);
        w.name("pid").number(pid);
        w.name("tid").number(tid);
        w.name("cname").string(s.part == null ? MISSING_COLOR : s.part.leaked() ? LEAKED_COLOR : RELEASED_COLOR);
        w.name("args").beginObject();
        w.name("state").string(state);
        w.name("commId").string(c.commId());
        w.name("api").string(c.api());
        if (c.nranks() != null) {
            w.name("nranks").number(c.nranks());
        }
        if (s.part == null) {
            w.name("rank").number(s.missingRank);
            w.name("note").string(Job.aboutMissing(c));
        } else {
            ReportFile.CommEntry e = s.part.comm();
            if (e.rank() != null) {
                w.name("rank").number(e.rank());
            }
            if (e.device() != null) {
                w.name("device").number(e.device());
            }
            w.name("handle").string(e.handle());
            w.name("thread").string(e.thread());
            if (e.releasedBy() != null) {
                w.name("releasedBy").string(e.releasedBy());
            }
            if (s.part.releaseTook() != null) {
                w.name("releaseTookMs").number(s.part.releaseTook().toMillis());
            }
            if (e.cleanup() != null) {
                w.name("cleanup").string(e.cleanup());
            }
            if (e.suppressed()) {
                w.name("suppressed").bool(true);
            }
            if (s.part.stack() != null) {
                w.name("stack").value(s.part.stack());
            }
        }
        w.endObject();
        w.endObject();
        if (s.part != null && s.part.releaseTook() != null) {
            // the destroy nested in its communicator's slice: visible when it waited for peers
            long start = Math.max(ts, micros(t0, s.part.comm().releaseStartedAt()));
            w.element().beginObject().name("name").string(s.part.comm().releasedBy()).name("cat").string("release")
                    .name("ph").string("X").name("ts").number(start)
                    .name("dur").number(Math.max(0, Math.min(ts + dur, micros(t0, s.part.comm().releasedAt())) - start))
                    .name("pid").number(pid).name("tid").number(tid).endObject();
        }
        if (s.part != null && s.part.leaked() && s.part.comm().cleanup() != null
                && !s.part.comm().cleanup().equals("none")) {
            w.element().beginObject().name("name").string("cleanup: " + s.part.comm().cleanup())
                    .name("cat").string("cleanup").name("ph").string("i").name("s").string("t").name("ts").number(ts + dur)
                    .name("pid").number(pid).name("tid").number(tid).endObject();
        }
    }

    private static void metadata(JsonOut w, String name, int pid, Integer tid, String key, Object value)
            throws IOException {
        w.element().beginObject().name("name").string(name).name("ph").string("M").name("ts").number(0)
                .name("pid").number(pid);
        if (tid != null) {
            w.name("tid").number(tid);
        } else {
            w.name("tid").number(0);
        }
        w.name("args").beginObject().name(key).value(value).endObject();
        w.endObject();
    }

    private static long micros(Instant t0, Instant at) {
        Duration d = Duration.between(t0, at);
        return Math.max(0, d.getSeconds() * 1_000_000 + d.getNano() / 1000);
    }
}
