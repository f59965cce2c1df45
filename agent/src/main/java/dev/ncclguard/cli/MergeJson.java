package dev.ncclguard.cli;

import java.io.IOException;
import java.io.OutputStream;
import java.time.Instant;
import java.util.List;

/**
 * merge's join as JSON, schema "ncclguard-merge/1" (docs/spec.md): the verdict, the reports read
 * and those that could not be, and every communicator with each rank's part and the ranks without
 * a report; what a tool needs so that it never has to parse the text.
 */
final class MergeJson {
    static final String SCHEMA = "ncclguard-merge/1";

    private MergeJson() {
    }

    static void write(Job job, List<Inputs.Failure> failures, MergeCommand.Verdict verdict, OutputStream sink)
            throws IOException {
        JsonWriter w = new JsonWriter(sink, true);
        w.beginObject();
        w.name("schema").value(SCHEMA);
        w.name("verdict").beginObject();
        w.name("failed").value(verdict.failed());
        w.name("line").value(verdict.line());
        w.name("communicators").value(job.communicators().size());
        w.name("leakedCommunicators").value(verdict.leakedComms());
        w.name("anyLeak").value(verdict.anyLeak());
        w.name("communicatorsMissingRanks").value(verdict.missingRanks().size());
        w.name("missingRanksAllowed").value(verdict.missingAllowed());
        w.name("unreadable").value(verdict.unreadable());
        w.endObject();
        w.name("timeZero").value(job.start().toString());
        w.name("reports").beginArray();
        for (Job.Process p : job.processes()) {
            ReportFile r = p.report();
            ReportFile.Summary s = r.summary();
            w.beginObject();
            w.name("path").value(r.path().toString());
            w.name("pid").value(r.pid());
            w.name("host").value(r.host());
            w.name("agentVersion").value(r.agentVersion());
            w.name("action").value(r.action());
            w.name("startedAt").value(time(r.startedAt()));
            w.name("writtenAt").value(time(r.writtenAt()));
            w.name("leakedComms").value(s.leakedComms());
            w.name("pendingEvents").value(s.pendingEvents());
            w.name("unsyncedStreams").value(s.unsyncedStreams());
            w.name("suppressed").value(s.suppressed());
            w.endObject();
        }
        w.endArray();
        w.name("unreadable").beginArray();
        for (Inputs.Failure f : failures) {
            w.beginObject().name("name").value(f.name()).name("why").value(f.why()).endObject();
        }
        w.endArray();
        w.name("notes").strings(job.notes());
        w.name("communicators").beginArray();
        for (Job.Communicator c : job.communicators()) {
            w.beginObject();
            w.name("commId").value(c.commId());
            w.name("api").value(c.api());
            w.name("nranks");
            if (c.nranks() == null) {
                w.nullValue();
            } else {
                w.value(c.nranks());
            }
            w.name("state").value(c.isLeaked() ? "leaked" : "released");
            w.name("createdAt").value(time(c.createdAt()));
            w.name("endedAt").value(time(c.endedAt()));
            w.name("missingRanks").beginArray();
            for (int rank : c.missing()) {
                w.value(rank);
            }
            w.endArray();
            w.name("missingRanksUncertain").value(c.uncertain());
            w.name("ranks").beginArray();
            for (Job.Part part : c.parts()) {
                rank(w, part);
            }
            w.endArray();
            w.endObject();
        }
        w.endArray();
        w.name("eventsAndStreams").beginArray();
        for (Job.Process p : job.processes()) {
            if (p.events() + p.streams() == 0) {
                continue;
            }
            w.beginObject();
            w.name("pid").value(p.report().pid());
            w.name("host").value(p.report().host());
            w.name("pendingEvents").value(p.events());
            w.name("unsyncedStreams").value(p.streams());
            w.endObject();
        }
        w.endArray();
        w.endObject();
        w.finish();
    }

    private static void rank(JsonWriter w, Job.Part part) throws IOException {
        ReportFile.CommEntry e = part.comm();
        w.beginObject();
        w.name("rank");
        integer(w, e.rank());
        w.name("pid").value(part.report().pid());
        w.name("host").value(part.report().host());
        w.name("device");
        integer(w, e.device());
        w.name("handle").value(e.handle());
        w.name("createdAt").value(time(e.createdAt()));
        w.name("releaseStartedAt").value(time(e.releaseStartedAt()));
        w.name("releasedAt").value(time(e.releasedAt()));
        w.name("releasedBy").value(e.releasedBy());
        w.name("leaked").value(e.leaked());
        w.name("suppressed").value(e.suppressed());
        w.name("cleanup").value(e.cleanup());
        w.name("exitAt").value(time(part.report().writtenAt()));
        w.name("stack").strings(part.leak() != null ? part.leak().stack() : List.of());
        w.endObject();
    }

    private static void integer(JsonWriter w, Integer v) throws IOException {
        if (v == null) {
            w.nullValue();
        } else {
            w.value(v);
        }
    }

    private static String time(Instant t) {
        return t == null ? null : t.toString();
    }
}
