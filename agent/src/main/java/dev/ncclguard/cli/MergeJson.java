package dev.ncclguard.cli;

import dev.ncclguard.json.JsonOut;
import dev.ncclguard.json.ReportSchema;
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
        JsonOut w = new JsonOut(sink);
        w.beginObject();
        w.name("schema").string(SCHEMA);
        w.name("verdict").beginObject();
        w.name("failed").bool(verdict.failed());
        w.name("line").string(verdict.line());
        w.name("communicators").number(job.communicatorCount());
        w.name("leakedCommunicators").number(verdict.leakedComms());
        w.name("anyLeak").bool(verdict.anyLeak());
        w.name("communicatorsMissingRanks").number(verdict.missingRanks().size());
        w.name("missingRanksAllowed").bool(verdict.missingAllowed());
        w.name("unreadable").number(verdict.unreadable());
        w.endObject();
        w.name("timeZero").string(job.start().toString());
        w.name("reports").beginArray();
        for (Job.Process p : job.processes()) {
            ReportFile r = p.report();
            ReportSchema.Summary s = r.summary();
            w.element().beginObject();
            w.name("path").string(r.path().toString());
            w.name("pid").number(r.pid());
            w.name("host").string(r.host());
            w.name("agentVersion").string(r.agentVersion());
            w.name("action").string(r.action());
            w.name("startedAt").string(time(r.startedAt()));
            w.name("writtenAt").string(time(r.writtenAt()));
            w.name("leakedComms").number(s.leakedComms());
            w.name("pendingEvents").number(s.pendingEvents());
            w.name("unsyncedStreams").number(s.unsyncedStreams());
            w.name("suppressed").number(s.suppressed());
            w.endObject();
        }
        w.endArray();
        w.name("unreadable").beginArray();
        for (Inputs.Failure f : failures) {
            w.element().beginObject().name("name").string(f.name()).name("why").string(f.why()).endObject();
        }
        w.endArray();
        w.name("notes").value(job.notes());
        w.name("communicators").beginArray();
        for (Job.Communicator c : job.communicators()) {
            w.element().beginObject();
            w.name("commId").string(c.commId());
            w.name("api").string(c.api());
            w.name("nranks").value(c.nranks());
            w.name("state").string(c.isLeaked() ? "leaked" : "released");
            w.name("createdAt").string(time(c.createdAt()));
            w.name("endedAt").string(time(c.endedAt()));
            w.name("missingRanks").beginArray();
            for (int rank : c.missing()) {
                w.element().number(rank);
            }
            w.endArray();
            w.name("missingRanksUncertain").string(c.uncertain());
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
            w.element().beginObject();
            w.name("pid").number(p.report().pid());
            w.name("host").string(p.report().host());
            w.name("pendingEvents").number(p.events());
            w.name("unsyncedStreams").number(p.streams());
            w.endObject();
        }
        w.endArray();
        w.endObject();
        w.newline();
        w.flush();
    }

    private static void rank(JsonOut w, Job.Part part) throws IOException {
        ReportFile.CommEntry e = part.comm();
        w.element().beginObject();
        w.name("rank").value(e.rank());
        w.name("pid").number(part.report().pid());
        w.name("host").string(part.report().host());
        w.name("device").value(e.device());
        w.name("handle").string(e.handle());
        w.name("createdAt").string(time(e.createdAt()));
        w.name("releaseStartedAt").string(time(e.releaseStartedAt()));
        w.name("releasedAt").string(time(e.releasedAt()));
        w.name("releasedBy").string(e.releasedBy());
        w.name("leaked").bool(e.leaked());
        w.name("suppressed").bool(e.suppressed());
        w.name("cleanup").string(e.cleanup());
        w.name("exitAt").string(time(part.report().writtenAt()));
        w.name("stack").value(part.stack() != null ? part.stack() : List.of());
        w.endObject();
    }

    private static String time(Instant t) {
        return t == null ? null : t.toString();
    }
}
