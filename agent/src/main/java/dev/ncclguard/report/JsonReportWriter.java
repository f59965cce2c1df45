package dev.ncclguard.report;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/**
 * Writes a report as pretty-printed UTF-8 JSON in the field order of schema ncclguard-report/1,
 * streaming from the report model into the output (see {@link JsonOut}): 100,000 leaks are some
 * 35 MB, which must not be built as a tree of maps and a String first. No library: the agent must
 * not bring a JSON library onto an application's class path.
 */
public final class JsonReportWriter {
    private JsonReportWriter() {
    }

    /** Writes the report to {@code out} (buffered here; {@code out} is neither flushed nor closed). */
    public static void write(Report report, OutputStream out) throws IOException {
        JsonOut json = new JsonOut(out);
        new Document(json).report(report);
        json.flush();
    }

    public static byte[] toBytes(Report report) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(4096 + 512 * Math.min(report.leaks().size(), 1 << 12));
        try {
            write(report, bytes);
        } catch (IOException e) {
            throw new UncheckedIOException(e); // a ByteArrayOutputStream does not throw
        }
        return bytes.toByteArray();
    }

    public static String toJson(Report report) {
        return new String(toBytes(report), StandardCharsets.UTF_8);
    }

    /** ISO-8601 in UTC, to the millisecond like the creation times the tracker records. */
    static String iso(Instant instant) {
        try {
            return IsoTime.format(instant.toEpochMilli());
        } catch (ArithmeticException e) {
            return instant.truncatedTo(ChronoUnit.MILLIS).toString();
        }
    }

    /** One report's writing: the stacks already written, by identity, as JSON at their depth. */
    private static final class Document {
        private final JsonOut json;
        /** A distinct stack is one List shared by its leaks (StackFrames.Cache), written out once. */
        private final Map<List<String>, byte[]> stacks = new IdentityHashMap<>();

        Document(JsonOut json) {
            this.json = json;
        }

        void report(Report report) throws IOException {
            json.beginObject();
            json.name("schema").string(report.schema());
            json.name("agentVersion").string(report.agentVersion());
            json.name("pid").number(report.pid());
            json.name("host").string(report.host());
            json.name("action").string(report.action());
            json.name("startedAt").time(report.startedAt());
            json.name("writtenAt").time(report.writtenAt());
            if (report.live()) {
                json.name("live").bool(true); // a dump of a running JVM; absent from exit reports
            }
            if (report.attachedAt() != null) {
                json.name("attachedAt").time(report.attachedAt());
            }
            Report.BeforeAttach before = report.beforeAttach();
            if (before != null) {
                json.name("beforeAttach").beginObject();
                json.name("ras").string(before.ras());
                if (before.communicators() != null) {
                    json.name("communicators").number(before.communicators());
                }
                if (before.ranksHere() != null) {
                    json.name("ranksInThisProcess").number(before.ranksHere());
                }
                json.name("note").string(before.note());
                json.endObject();
            }
            Report.Summary s = report.summary();
            json.name("summary").beginObject();
            json.name("commsCreated").number(s.commsCreated());
            json.name("commsReleased").number(s.commsReleased());
            json.name("leakedComms").number(s.leakedComms());
            json.name("pendingEvents").number(s.pendingEvents());
            json.name("unsyncedStreams").number(s.unsyncedStreams());
            json.name("cleaned").number(s.cleaned());
            json.name("cleanupFailed").number(s.cleanupFailed());
            json.name("suppressed").number(s.suppressed());
            json.endObject();
            json.name("leaks").beginArray();
            for (Leak leak : report.leaks()) {
                json.element();
                leak(leak, null);
            }
            json.endArray();
            // Additions to schema ncclguard-report/1 (docs/spec.md): after every field of the SPEC.
            json.name("suppressed").beginArray();
            for (Report.Suppressed entry : report.suppressed()) {
                json.element();
                leak(entry.leak(), entry.rule());
            }
            json.endArray();
            json.name("communicators").beginArray();
            for (Report.Communicator c : report.communicators()) {
                json.element();
                communicator(c);
            }
            json.endArray();
            json.name("communicatorsOmitted").number(report.communicatorsOmitted());
            json.endObject();
            json.newline();
        }

        private void leak(Leak leak, String suppression) throws IOException {
            json.beginObject();
            json.name("kind").string(leak.kind().word());
            json.name("handle").string(leak.handle());
            json.name("api").string(leak.api());
            json.name("bridge").string(leak.bridge());
            json.name("thread").string(leak.thread());
            json.name("createdAt").time(leak.createdAt());
            json.name("stack");
            stack(leak.stack());
            json.name("details").value(leak.details());
            json.name("cleanup").string(leak.cleanup().word());
            if (leak.cleanupNote() != null) {
                json.name("cleanupNote").string(leak.cleanupNote());
            }
            if (suppression != null) {
                json.name("suppression").string(suppression);
            }
            json.endObject();
        }

        private void stack(List<String> frames) throws IOException {
            if (frames == null || frames.isEmpty()) {
                json.value(frames);
                return;
            }
            byte[] written = stacks.get(frames);
            if (written == null) {
                ByteArrayOutputStream bytes = new ByteArrayOutputStream(128 * frames.size());
                JsonOut fragment = JsonOut.fragment(bytes, json.depth());
                fragment.value(frames).flush();
                written = bytes.toByteArray();
                stacks.put(frames, written);
            }
            json.bytes(written);
        }

        private void communicator(Report.Communicator c) throws IOException {
            json.beginObject();
            json.name("commId").string(c.commId());
            json.name("rank").value(c.rank());
            json.name("nranks").value(c.nranks());
            json.name("device").number(c.device());
            json.name("handle").string(c.handle());
            json.name("api").string(c.api());
            json.name("thread").string(c.thread());
            json.name("createdAt").time(c.createdAt());
            json.name("releasedAt").time(c.releasedAt());
            json.name("releasedBy").string(c.releasedBy());
            json.name("leaked").bool(c.leaked());
            if (c.suppressed()) {
                json.name("suppressed").bool(true);
            }
            if (c.cleanup() != null) {
                json.name("cleanup").string(c.cleanup().word());
            }
            json.endObject();
        }
    }
}
