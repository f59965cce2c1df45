package dev.ncclguard.report;

import dev.ncclguard.catalog.DetailKeys;
import dev.ncclguard.catalog.Kind;
import dev.ncclguard.cleanup.Outcome;
import dev.ncclguard.json.IsoTime;
import dev.ncclguard.json.JsonOut;
import dev.ncclguard.json.ReportSchema;
import dev.ncclguard.json.ReportSchema.LeakFields;
import dev.ncclguard.track.Details;
import dev.ncclguard.track.HandleView;
import dev.ncclguard.track.NativeOrigin;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Writes a report as pretty-printed UTF-8 JSON in the field order of schema ncclguard-report/1,
 * streaming from the report model into the output (see {@link JsonOut}): a big report (sizes:
 * docs/performance.md, "Sizes the code is shaped by") must not be built as a tree of maps and a
 * String first. No library: the agent must
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

    /** The report as the content of a report file, written into it as it is made. */
    public static ReportFiles.Content content(Report report) {
        return new ReportFiles.Content() { // a class, not a lambda: no method handles to link at exit
            @Override
            public void writeTo(OutputStream out) throws IOException {
                write(report, out);
            }
        };
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
        return IsoTime.format(instant);
    }

    /**
     * One report's writing. A leak entry is mostly made of parts that repeat from leak to leak (the
     * field names and indentation, api, bridge and thread, the stack, the details, the cleanup):
     * those are written once as bytes and copied, so a leak costs a few copies, its hex handle and
     * its time. Only immutable parts are cached: {@link Details}, and the stack lists of a report.
     */
    private static final class Document {
        /** Bounds the caches: parts that do not repeat are written afresh once it is reached. */
        private static final int MAX_PARTS = 1024;
        /** Members of a leak entry written when its handle is next, and when its stack is next. */
        private static final int BEFORE_API = 2;
        private static final int BEFORE_STACK = 6;

        private final JsonOut json;
        /** A distinct stack is one List shared by its leaks (StackFrames.Cache), written out once. */
        private final Map<List<String>, byte[]> stacks = new IdentityHashMap<>();
        private final Map<Kind, byte[]> heads = new EnumMap<>(Kind.class);
        private final Map<Middle, byte[]> middles = new HashMap<>();
        private final Map<Tail, byte[]> tails = new HashMap<>();
        private Middle lastMiddle;
        private byte[] lastMiddleBytes;
        private Details lastCacheable;
        private Tail lastTail;
        private byte[] lastTailBytes;

        // Keys of the part caches. Classes rather than records: docs/performance.md, "Records at exit".

        /** From the api to the createdAt's name. */
        private static final class Middle {
            final String api;
            final String bridge;
            final String thread;

            Middle(HandleView v) {
                api = v.api();
                bridge = v.bridge();
                thread = v.thread();
            }

            boolean sameAs(HandleView v) {
                return api == v.api() && bridge == v.bridge() && thread == v.thread();
            }

            @Override
            public boolean equals(Object o) {
                return o instanceof Middle m && Objects.equals(api, m.api) && Objects.equals(bridge, m.bridge)
                        && Objects.equals(thread, m.thread);
            }

            @Override
            public int hashCode() {
                return Objects.hashCode(api) * 961 + Objects.hashCode(bridge) * 31 + Objects.hashCode(thread);
            }
        }

        /** From the stack to the end of the entry, for a leak without cleanup note or suppression. */
        private static final class Tail {
            final List<String> stack;
            final Details details;
            final Boolean stillPending;
            final Outcome cleanup;

            Tail(Leak leak, Details details) {
                stack = leak.stack();
                this.details = details;
                stillPending = leak.stillPending();
                cleanup = leak.cleanup();
            }

            boolean sameAs(Leak leak, Details d) {
                return stack == leak.stack() && details == d && stillPending == leak.stillPending()
                        && cleanup == leak.cleanup();
            }

            @Override
            public boolean equals(Object o) {
                return o instanceof Tail t && stack.equals(t.stack) && details.sameFields(t.details)
                        && Objects.equals(stillPending, t.stillPending) && cleanup == t.cleanup;
            }

            @Override
            public int hashCode() {
                return (stack.hashCode() * 31 + details.hashCode()) * 31 + Objects.hashCode(stillPending) * 7
                        + cleanup.ordinal();
            }
        }

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
            json.name(ReportSchema.SUMMARY).beginObject();
            long[] summary = report.summary().values();
            for (int i = 0; i < summary.length; i++) {
                json.name(ReportSchema.Summary.FIELDS.get(i)).number(summary[i]);
            }
            json.endObject();
            json.name(ReportSchema.LEAKS).beginArray();
            for (Leak leak : report.leaks()) {
                json.element();
                leak(leak, null);
            }
            json.endArray();
            // Additions to schema ncclguard-report/1 (docs/spec.md): after every field of the SPEC.
            json.name(ReportSchema.SUPPRESSED).beginArray();
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
            if (!report.suppressedCallers().isEmpty()) {
                json.name("suppressedCallers").beginArray();
                for (String library : report.suppressedCallers()) {
                    json.element();
                    json.string(library);
                }
                json.endArray();
            }
            json.endObject();
            json.newline();
        }

        private void leak(Leak leak, String suppression) throws IOException {
            HandleView view = leak.view();
            int depth = json.depth() + 1; // the entry's, inside the array
            Details d = cacheable(view.details());
            if (d == null || leak.cleanupNote() != null || suppression != null || leak.origin() != null
                    || leak.note() != null || leak.defaultStream() != null) {
                generic(leak, suppression);
                return;
            }
            byte[] head = heads.get(view.kind());
            if (head == null) {
                JsonOut out = JsonOut.fragment(depth - 1, 1);
                out.beginObject();
                out.name(LeakFields.KIND).repeated(view.kind().word());
                out.name(LeakFields.HANDLE);
                head = out.fragmentBytes();
                heads.put(view.kind(), head);
            }
            json.bytes(head);
            json.hexHandle(view.handle());
            json.bytes(middle(view, depth));
            json.time(view.createdAtMillis());
            json.bytes(tail(leak, d, depth));
        }

        /** The view's details when they are a Details of the tracker's kind (immutable, without stillPending). */
        private Details cacheable(Object details) {
            if (details == lastCacheable && details != null) {
                return lastCacheable;
            }
            if (details instanceof Details d && !d.containsKey(DetailKeys.STILL_PENDING)) {
                lastCacheable = d;
                return d;
            }
            return null;
        }

        private byte[] middle(HandleView view, int depth) throws IOException {
            if (lastMiddle != null && lastMiddle.sameAs(view)) {
                return lastMiddleBytes;
            }
            Middle key = new Middle(view);
            byte[] bytes = middles.get(key);
            if (bytes == null) {
                JsonOut out = JsonOut.fragment(depth, BEFORE_API);
                out.name(LeakFields.API).repeated(view.api());
                out.name(LeakFields.BRIDGE).repeated(view.bridge());
                out.name(LeakFields.THREAD).repeated(view.thread());
                out.name(LeakFields.CREATED_AT);
                bytes = out.fragmentBytes();
                if (middles.size() < MAX_PARTS) {
                    middles.put(key, bytes);
                }
            }
            lastMiddle = key;
            lastMiddleBytes = bytes;
            return bytes;
        }

        private byte[] tail(Leak leak, Details d, int depth) throws IOException {
            if (lastTail != null && lastTail.sameAs(leak, d)) {
                return lastTailBytes;
            }
            Tail key = new Tail(leak, d);
            byte[] bytes = tails.get(key);
            if (bytes == null) {
                JsonOut out = JsonOut.fragment(depth, BEFORE_STACK);
                out.name(LeakFields.STACK).value(leak.stack());
                out.name(LeakFields.DETAILS);
                details(out, d, leak.stillPending());
                out.name(LeakFields.CLEANUP).repeated(leak.cleanup().word());
                out.endObject();
                bytes = out.fragmentBytes();
                if (tails.size() < MAX_PARTS) {
                    tails.put(key, bytes);
                }
            }
            lastTail = key;
            lastTailBytes = bytes;
            return bytes;
        }

        /** Field by field, for the leaks whose parts are not cached. */
        private void generic(Leak leak, String suppression) throws IOException {
            HandleView view = leak.view();
            json.beginObject();
            json.name(LeakFields.KIND).repeated(view.kind().word());
            json.name(LeakFields.HANDLE).hexHandle(view.handle());
            json.name(LeakFields.API).repeated(view.api());
            json.name(LeakFields.BRIDGE).repeated(view.bridge());
            json.name(LeakFields.THREAD).repeated(view.thread());
            json.name(LeakFields.CREATED_AT).time(view.createdAtMillis());
            json.name(LeakFields.STACK);
            stack(leak.stack());
            NativeOrigin origin = leak.origin();
            if (origin != null) {
                // who called in native code (the interposer bridge's leaks)
                if (origin.callerLibrary() != null) {
                    json.name(LeakFields.CALLER_LIBRARY).string(origin.callerLibrary());
                }
                if (origin.callerSymbol() != null) {
                    json.name(LeakFields.CALLER_SYMBOL).string(origin.callerSymbol());
                }
                if (!origin.nativeStack().isEmpty()) {
                    json.name(LeakFields.NATIVE_STACK).value(origin.nativeStack());
                }
            }
            json.name(LeakFields.DETAILS);
            if (view.details() instanceof Details d && !d.containsKey(DetailKeys.STILL_PENDING)) {
                details(json, d, leak.stillPending());
            } else {
                json.value(leak.details());
            }
            json.name(LeakFields.CLEANUP).repeated(leak.cleanup().word());
            if (leak.cleanupNote() != null) {
                // one String shared by the many leaks a deadline cut short: encoded once
                json.name(LeakFields.CLEANUP_NOTE).repeated(leak.cleanupNote());
            }
            if (leak.note() != null) {
                json.name(LeakFields.NOTE).string(leak.note());
            }
            if (suppression != null) {
                json.name(LeakFields.SUPPRESSION).string(suppression);
            }
            if (leak.defaultStream() != null) {
                json.name(LeakFields.DEFAULT_STREAM).string(leak.defaultStream());
            }
            json.endObject();
        }

        /** The view's details and the probe's stillPending, without merging them into a map first. */
        private static void details(JsonOut out, Details d, Boolean stillPending) throws IOException {
            if (d.isEmpty() && stillPending == null) {
                out.value(d);
                return;
            }
            out.beginObject();
            for (int i = 0; i < d.size(); i++) {
                out.name(d.key(i)).value(d.value(i));
            }
            if (stillPending != null) {
                out.name(DetailKeys.STILL_PENDING).bool(stillPending);
            }
            out.endObject();
        }

        private void stack(List<String> frames) throws IOException {
            if (frames == null || frames.isEmpty()) {
                json.value(frames);
                return;
            }
            byte[] written = stacks.get(frames);
            if (written == null) {
                written = JsonOut.fragment(json.depth(), 0).value(frames).fragmentBytes();
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
            // only when known: 10,000 released communicators of an older run's shape stay as small
            if (c.releaseStartedAt() != null) {
                json.name("releaseStartedAt").time(c.releaseStartedAt());
            }
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
