package dev.ncclguard.cli;

import dev.ncclguard.catalog.DetailKeys;
import dev.ncclguard.catalog.DetailKeys;
import dev.ncclguard.catalog.Kind;
import dev.ncclguard.json.IsoTime;
import dev.ncclguard.json.Json;
import dev.ncclguard.json.JsonReader;
import dev.ncclguard.json.ReportSchema;
import dev.ncclguard.json.ReportSchema.LeakFields;
import dev.ncclguard.json.ReportSchema.Summary;
import dev.ncclguard.report.LeakGroups;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;

/**
 * One JSON report as the commands read it, checked against schema ncclguard-report/1 (its JSON
 * Schema: docs/schema/ncclguard-report-1.schema.json): every field of the SPEC present with its
 * type, the summary's counts agreeing with the leaks listed. The additions of docs/spec.md
 * ({@code suppressed}, {@code communicators}) are optional, so reports of agents that predate them
 * still read.
 *
 * <p>The report is streamed: each leak and communicator entry goes to an {@link Entries} as it is
 * read, and only the header and the counts stay here, so a report of a million leaks is checked in
 * a small heap. What a command keeps of the entries is its own choice.
 *
 * @param communicatorsListed whether the report has a {@code communicators} list (agents before it had none)
 * @param attached            what an attach left in the report ({@code attachedAt}, {@code beforeAttach}); null
 *                            when the agent started with the JVM
 */
record ReportFile(
        Path path,
        String agentVersion,
        long pid,
        String host,
        String action,
        Instant startedAt,
        Instant writtenAt,
        boolean live,
        Summary summary,
        boolean communicatorsListed,
        long communicatorsOmitted,
        Attached attached) {

    static final String SCHEMA = ReportSchema.NAME;

    /**
     * An entry of {@code leaks} or {@code suppressed} as read, in the report's words (cleanup a word,
     * times as Instants) where the writer's {@link dev.ncclguard.report.Leak} holds the tracker's
     * view; both are grouped by one rule ({@link LeakGroups}). {@code suppression} is the rule, for
     * the latter; callerLibrary, callerSymbol and nativeStack are there for leaks made in native code.
     */
    record LeakEntry(Kind kind, String handle, String api, String bridge, String thread, Instant createdAt,
            List<String> stack, Map<String, Object> details, String cleanup, String cleanupNote, String suppression,
            String callerLibrary, String callerSymbol, List<String> nativeStack) implements LeakGroups.Member {

        @Override
        public Boolean stillPending() {
            return details.get(DetailKeys.STILL_PENDING) instanceof Boolean b ? b : null;
        }

        @Override
        public String cleanupWord() {
            return cleanup;
        }

        @Override
        public boolean fromNativeCode() {
            return callerLibrary != null || callerSymbol != null || !nativeStack.isEmpty();
        }

        Integer rank() {
            return integer(details.get(DetailKeys.RANK));
        }

        Integer nranks() {
            return integer(details.get(DetailKeys.NRANKS));
        }

        Integer device() {
            return integer(details.get(DetailKeys.DEVICE));
        }

        String commId() {
            Object id = details.get(DetailKeys.COMM_ID);
            return id instanceof String s ? s : null;
        }

        String topFrame() {
            return stack.isEmpty() ? null : stack.get(0);
        }
    }

    /**
     * An entry of {@code communicators}.
     *
     * @param releaseStartedAt when the application's destroy or abort was called (null when the
     *                         report does not say): with releasedAt, how long the release waited
     */
    record CommEntry(String commId, Integer rank, Integer nranks, Integer device, String handle, String api,
            String thread, Instant createdAt, Instant releaseStartedAt, Instant releasedAt, String releasedBy,
            boolean leaked, boolean suppressed, String cleanup) {
    }

    /**
     * A report an attach made: tracked since {@code at}; what NCCL's RAS said at the attach of the
     * communicators that existed (ranks of this process, communicators of the job), each null when unknown.
     */
    record Attached(Instant at, Integer ranksHere, Integer commsInJob) {
        /** "partial: tracked since …, attached; …" ({@link dev.ncclguard.report.Partial}). */
        String words() {
            return dev.ncclguard.report.Partial.words(at, ranksHere, commsInJob);
        }
    }

    /** Whether the agent was attached to the running JVM, so that the report covers it only since then. */
    boolean partial() {
        return attached != null;
    }

    /** What a command does with the entries of a report as they are read. */
    interface Entries {
        default void leak(LeakEntry leak) {
        }

        default void suppressed(LeakEntry leak) {
        }

        default void communicator(CommEntry comm) {
        }
    }

    /** Keeps nothing: the verdict needs only the counts. */
    static final Entries NONE = new Entries() {
    };

    /** Keeps every entry: for small reports and tests. */
    static final class Kept implements Entries {
        final List<LeakEntry> leaks = new ArrayList<>();
        final List<LeakEntry> suppressed = new ArrayList<>();
        final List<CommEntry> communicators = new ArrayList<>();

        @Override
        public void leak(LeakEntry leak) {
            leaks.add(leak);
        }

        @Override
        public void suppressed(LeakEntry leak) {
            suppressed.add(leak);
        }

        @Override
        public void communicator(CommEntry comm) {
            communicators.add(comm);
        }
    }

    /** A report that cannot be read or is not a whole ncclguard report; the message says why. */
    static final class BadReportException extends Exception {
        private static final long serialVersionUID = 1L;

        BadReportException(String message) {
            super(message);
        }
    }

    /** Same process, same start, same end, same counts: a copy of one report under another name. */
    record Identity(long pid, String host, Instant startedAt, Instant writtenAt, Summary summary) {
    }

    Identity identity() {
        return new Identity(pid, host, startedAt, writtenAt, summary);
    }

    boolean hasLeaks() {
        return summary.leaks() > 0;
    }

    /** "pid 4242 on gpu-01" */
    String process() {
        return "pid " + pid + " on " + host;
    }

    /** Reads a report file (a regular file: {@link Inputs} checked it), handing its entries to {@code entries}. */
    static ReportFile read(Path path, Entries entries) throws BadReportException {
        try (InputStream in = Files.newInputStream(path)) {
            return read(in, path, entries);
        } catch (IOException e) {
            throw new BadReportException("cannot read: " + Inputs.reason(e));
        }
    }

    static ReportFile read(InputStream in, Path path, Entries entries) throws BadReportException, IOException {
        JsonReader json = new JsonReader(in);
        try {
            return new Reading(json, path, entries).report();
        } catch (Json.ParseException e) {
            throw new BadReportException((e.truncated ? "truncated or malformed JSON: " : "malformed JSON: ")
                    + e.getMessage());
        }
    }

    static Integer integer(Object value) {
        return value instanceof Long n && n >= Integer.MIN_VALUE && n <= Integer.MAX_VALUE ? (int) (long) n : null;
    }

    /** One report being read: the top-level object's fields in whatever order they come. */
    private static final class Reading {
        private final JsonReader json;
        private final Path path;
        private final Entries entries;
        private final long[] listed = new long[Kind.values().length];
        private long suppressedListed;
        private boolean hasSuppressed;

        Reading(JsonReader json, Path path, Entries entries) {
            this.json = json;
            this.path = path;
            this.entries = entries;
        }

        ReportFile report() throws IOException, Json.ParseException, BadReportException {
            JsonReader.Token first = json.next();
            if (first != JsonReader.Token.BEGIN_OBJECT) {
                json.skip(first); // a fault in its syntax comes first
                json.next();
                throw new BadReportException("the report is not a JSON object");
            }
            String schema = null;
            boolean sawSchema = false;
            String agentVersion = null;
            Long pid = null;
            String host = null;
            String action = null;
            Instant startedAt = null;
            Instant writtenAt = null;
            boolean live = false;
            Summary summary = null;
            boolean hasLeaks = false;
            boolean hasComms = false;
            long omitted = 0;
            Instant attachedAt = null;
            Integer[] before = {null, null};
            for (JsonReader.Token t = json.next(); t == JsonReader.Token.NAME; t = json.next()) {
                String name = json.text();
                JsonReader.Token v = json.next();
                switch (name) {
                    case "schema" -> {
                        schema = string(v, "schema");
                        sawSchema = true;
                        if (!SCHEMA.equals(schema)) {
                            throw notOurs(schema);
                        }
                    }
                    case "agentVersion" -> agentVersion = string(v, "agentVersion");
                    case "pid" -> pid = count(v, "pid");
                    case "host" -> host = string(v, "host");
                    case "action" -> action = string(v, "action");
                    case "startedAt" -> startedAt = instant(v, "startedAt");
                    case "writtenAt" -> writtenAt = instant(v, "writtenAt");
                    case "live" -> live = bool(v, "live");
                    case ReportSchema.SUMMARY -> summary = summary(v);
                    case ReportSchema.LEAKS -> {
                        hasLeaks = true;
                        leaks(v, ReportSchema.LEAKS, true);
                    }
                    case ReportSchema.SUPPRESSED -> {
                        hasSuppressed = true;
                        leaks(v, ReportSchema.SUPPRESSED, false);
                    }
                    case "communicators" -> {
                        hasComms = true;
                        communicators(v);
                    }
                    case "communicatorsOmitted" -> omitted = count(v, "communicatorsOmitted");
                    case "attachedAt" -> attachedAt = optionalInstant(v, "attachedAt");
                    case "beforeAttach" -> beforeAttach(v, before);
                    default -> json.skip(v);
                }
            }
            if (json.next() != JsonReader.Token.END) {
                throw new IllegalStateException("the reader ends after the top-level object");
            }
            if (!sawSchema) {
                throw new BadReportException("missing field schema");
            }
            if (summary == null) {
                throw new BadReportException("missing field summary");
            }
            if (!hasLeaks) {
                throw new BadReportException("missing field leaks");
            }
            for (Kind k : Kind.values()) {
                // a report of an agent before the additions has no count for their kinds, nor such leaks
                if (summary.leaked(k) >= 0 || listed[k.ordinal()] > 0) {
                    agree(summary.leaked(k), listed[k.ordinal()], k);
                }
            }
            if (summary.leakedDevComms() < 0 || summary.leakedMemory() < 0) {
                summary = new Summary(summary.commsCreated(), summary.commsReleased(), summary.leakedComms(),
                        summary.pendingEvents(), summary.unsyncedStreams(), summary.cleaned(), summary.cleanupFailed(),
                        summary.suppressed(), Math.max(0, summary.leakedDevComms()), Math.max(0, summary.leakedMemory()));
            }
            if (hasSuppressed && summary.suppressed() >= 0 && summary.suppressed() != suppressedListed) {
                throw new BadReportException("summary.suppressed is " + summary.suppressed() + " but suppressed lists "
                        + suppressedListed);
            }
            return new ReportFile(path, required(agentVersion, "agentVersion"), required(pid, "pid"),
                    required(host, "host"), required(action, "action"), required(startedAt, "startedAt"),
                    required(writtenAt, "writtenAt"), live,
                    summary.suppressed() < 0 ? withSuppressed(summary, suppressedListed) : summary, hasComms, omitted,
                    attachedAt == null ? null : new Attached(attachedAt, before[1], before[0]));
        }

        /** beforeAttach's counts into {communicators, ranksInThisProcess}; the rest (ras, note) is for people. */
        private void beforeAttach(JsonReader.Token v, Integer[] into)
                throws IOException, Json.ParseException, BadReportException {
            if (v == JsonReader.Token.NULL) {
                return;
            }
            object(v, "beforeAttach");
            for (JsonReader.Token n = json.next(); n == JsonReader.Token.NAME; n = json.next()) {
                String name = json.text();
                JsonReader.Token value = json.next();
                switch (name) {
                    case "communicators" -> into[0] = optionalInt(value, "beforeAttach.communicators");
                    case "ranksInThisProcess" -> into[1] = optionalInt(value, "beforeAttach.ranksInThisProcess");
                    default -> json.skip(value);
                }
            }
        }

        private static Summary withSuppressed(Summary s, long suppressed) {
            return new Summary(s.commsCreated(), s.commsReleased(), s.leakedComms(), s.pendingEvents(),
                    s.unsyncedStreams(), s.cleaned(), s.cleanupFailed(), suppressed, s.leakedDevComms(),
                    s.leakedMemory());
        }

        private static <T> T required(T value, String name) throws BadReportException {
            if (value == null) {
                throw new BadReportException("missing field " + name);
            }
            return value;
        }

        private static void agree(long count, long listed, Kind kind) throws BadReportException {
            if (listed != count) {
                throw new BadReportException("summary." + kind.summaryField() + " is " + count + " but leaks lists "
                        + listed + " of kind " + kind.word());
            }
        }

        private static BadReportException notOurs(String schema) {
            return new BadReportException("not an ncclguard report: schema is \"" + schema + "\", expected \""
                    + SCHEMA + "\"");
        }

        private Summary summary(JsonReader.Token v) throws IOException, Json.ParseException, BadReportException {
            object(v, "summary");
            List<String> names = Summary.FIELDS;
            long[] n = new long[names.size()];
            java.util.Arrays.fill(n, -1); // -1: absent
            for (JsonReader.Token t = json.next(); t == JsonReader.Token.NAME; t = json.next()) {
                String name = json.text();
                JsonReader.Token value = json.next();
                int i = names.indexOf(name);
                if (i < 0) {
                    json.skip(value);
                } else {
                    n[i] = count(value, "summary." + name);
                }
            }
            for (int i = 0; i < n.length; i++) {
                if (n[i] < 0 && !Summary.OPTIONAL.contains(names.get(i))) {
                    throw new BadReportException("missing field summary." + names.get(i));
                }
            }
            return Summary.of(n);
        }

        private void leaks(JsonReader.Token v, String field, boolean counted)
                throws IOException, Json.ParseException, BadReportException {
            array(v, field);
            long i = 0;
            for (JsonReader.Token t = json.next(); t != JsonReader.Token.END_ARRAY; t = json.next()) {
                LeakEntry leak = leak(t, field + "[" + i + "]", counted);
                if (counted) {
                    listed[leak.kind().ordinal()]++;
                    entries.leak(leak);
                } else {
                    suppressedListed++;
                    entries.suppressed(leak);
                }
                i++;
            }
        }

        private LeakEntry leak(JsonReader.Token v, String where, boolean counted)
                throws IOException, Json.ParseException, BadReportException {
            object(v, where);
            Kind kind = null;
            String handle = null;
            String api = null;
            String bridge = null;
            String thread = null;
            Instant createdAt = null;
            List<String> stack = null;
            Map<String, Object> details = null;
            String cleanup = null;
            String cleanupNote = null;
            String suppression = null;
            String callerLibrary = null;
            String callerSymbol = null;
            List<String> nativeStack = List.of();
            for (JsonReader.Token t = json.next(); t == JsonReader.Token.NAME; t = json.next()) {
                String name = json.text();
                JsonReader.Token value = json.next();
                String at = where + "." + name;
                switch (name) {
                    case LeakFields.KIND -> {
                        String word = string(value, at);
                        kind = Kind.of(word);
                        if (kind == null) {
                            throw new BadReportException(at + " is \"" + word + "\", expected comm, event, stream,"
                                    + " devcomm or memory");
                        }
                    }
                    case LeakFields.HANDLE -> handle = string(value, at);
                    case LeakFields.API -> api = string(value, at);
                    case LeakFields.BRIDGE -> bridge = string(value, at);
                    case LeakFields.THREAD -> thread = string(value, at);
                    case LeakFields.CREATED_AT -> createdAt = instant(value, at);
                    case LeakFields.STACK -> stack = stack(value, at);
                    case LeakFields.DETAILS -> {
                        object(value, at);
                        details = Collections.unmodifiableMap(Json.members(json));
                    }
                    case LeakFields.CLEANUP -> cleanup = string(value, at);
                    case LeakFields.CLEANUP_NOTE -> cleanupNote = optionalString(value, at);
                    case LeakFields.SUPPRESSION -> suppression = counted ? skipped(value) : optionalString(value, at);
                    case LeakFields.CALLER_LIBRARY -> callerLibrary = optionalString(value, at);
                    case LeakFields.CALLER_SYMBOL -> callerSymbol = optionalString(value, at);
                    case LeakFields.NATIVE_STACK -> nativeStack = stack(value, at);
                    default -> json.skip(value);
                }
            }
            String[] names = {LeakFields.KIND, LeakFields.STACK, LeakFields.HANDLE, LeakFields.API, LeakFields.BRIDGE,
                LeakFields.THREAD, LeakFields.CREATED_AT, LeakFields.DETAILS, LeakFields.CLEANUP};
            Object[] values = {kind, stack, handle, api, bridge, thread, createdAt, details, cleanup};
            for (int i = 0; i < names.length; i++) {
                if (values[i] == null) {
                    throw new BadReportException("missing field " + where + "." + names[i]);
                }
            }
            return new LeakEntry(kind, handle, api, bridge, thread, createdAt, stack, details, cleanup, cleanupNote,
                    suppression, callerLibrary, callerSymbol, nativeStack);
        }

        private String skipped(JsonReader.Token value) throws IOException, Json.ParseException {
            json.skip(value);
            return null;
        }

        private List<String> stack(JsonReader.Token v, String where)
                throws IOException, Json.ParseException, BadReportException {
            array(v, where);
            List<String> frames = new ArrayList<>();
            int f = 0;
            for (JsonReader.Token t = json.next(); t != JsonReader.Token.END_ARRAY; t = json.next()) {
                if (t != JsonReader.Token.STRING) {
                    throw new BadReportException(where + "[" + f + "] is not a string");
                }
                frames.add(json.text());
                f++;
            }
            return frames.isEmpty() ? List.of() : Collections.unmodifiableList(frames);
        }

        private void communicators(JsonReader.Token v) throws IOException, Json.ParseException, BadReportException {
            array(v, "communicators");
            long i = 0;
            for (JsonReader.Token t = json.next(); t != JsonReader.Token.END_ARRAY; t = json.next()) {
                String where = "communicators[" + i++ + "]";
                object(t, where);
                String commId = null;
                Integer rank = null;
                Integer nranks = null;
                Integer device = null;
                String handle = null;
                String api = null;
                String thread = null;
                Instant createdAt = null;
                Instant releaseStartedAt = null;
                Instant releasedAt = null;
                String releasedBy = null;
                Boolean leaked = null;
                boolean suppressed = false;
                String cleanup = null;
                for (JsonReader.Token n = json.next(); n == JsonReader.Token.NAME; n = json.next()) {
                    String name = json.text();
                    JsonReader.Token value = json.next();
                    String at = where + "." + name;
                    switch (name) {
                        case "commId" -> commId = optionalString(value, at);
                        case "rank" -> rank = optionalInt(value, at);
                        case "nranks" -> nranks = optionalInt(value, at);
                        case "device" -> device = optionalInt(value, at);
                        case "handle" -> handle = string(value, at);
                        case "api" -> api = string(value, at);
                        case "thread" -> thread = string(value, at);
                        case "createdAt" -> createdAt = instant(value, at);
                        case "releaseStartedAt" -> releaseStartedAt = optionalInstant(value, at);
                        case "releasedAt" -> releasedAt = optionalInstant(value, at);
                        case "releasedBy" -> releasedBy = optionalString(value, at);
                        case "leaked" -> leaked = bool(value, at);
                        case "suppressed" -> suppressed = bool(value, at);
                        case "cleanup" -> cleanup = optionalString(value, at);
                        default -> json.skip(value);
                    }
                }
                String[] names = {"handle", "api", "thread", "createdAt", "leaked"};
                Object[] values = {handle, api, thread, createdAt, leaked};
                for (int k = 0; k < names.length; k++) {
                    if (values[k] == null) {
                        throw new BadReportException("missing field " + where + "." + names[k]);
                    }
                }
                if (!leaked && releasedAt == null) {
                    throw new BadReportException(where + " is not leaked but has no releasedAt");
                }
                entries.communicator(new CommEntry(commId, rank, nranks, device, handle, api, thread, createdAt,
                        releaseStartedAt, releasedAt, releasedBy, leaked, suppressed, cleanup));
            }
        }

        private void object(JsonReader.Token v, String where)
                throws IOException, Json.ParseException, BadReportException {
            if (v != JsonReader.Token.BEGIN_OBJECT) {
                json.skip(v);
                throw new BadReportException(where + " is not a JSON object");
            }
        }

        private void array(JsonReader.Token v, String where)
                throws IOException, Json.ParseException, BadReportException {
            if (v != JsonReader.Token.BEGIN_ARRAY) {
                json.skip(v);
                throw new BadReportException(where + " is not a JSON array");
            }
        }

        private String string(JsonReader.Token v, String where)
                throws IOException, Json.ParseException, BadReportException {
            if (v != JsonReader.Token.STRING) {
                json.skip(v);
                throw new BadReportException(where + " is not a string");
            }
            return json.text();
        }

        private String optionalString(JsonReader.Token v, String where)
                throws IOException, Json.ParseException, BadReportException {
            return v == JsonReader.Token.NULL ? null : string(v, where);
        }

        private long count(JsonReader.Token v, String where)
                throws IOException, Json.ParseException, BadReportException {
            if (v != JsonReader.Token.NUMBER || !json.fitsLong() || json.longValue() < 0) {
                json.skip(v);
                throw new BadReportException(where + " is not a whole number of 0 or more");
            }
            return json.longValue();
        }

        private Integer optionalInt(JsonReader.Token v, String where)
                throws IOException, Json.ParseException, BadReportException {
            if (v == JsonReader.Token.NULL) {
                return null;
            }
            if (v != JsonReader.Token.NUMBER || !json.fitsLong() || json.longValue() != (int) json.longValue()) {
                json.skip(v);
                throw new BadReportException(where + " is not an integer");
            }
            return (int) json.longValue();
        }

        private boolean bool(JsonReader.Token v, String where)
                throws IOException, Json.ParseException, BadReportException {
            if (v != JsonReader.Token.TRUE && v != JsonReader.Token.FALSE) {
                json.skip(v);
                throw new BadReportException(where + " is not true or false");
            }
            return v == JsonReader.Token.TRUE;
        }

        private Instant instant(JsonReader.Token v, String where)
                throws IOException, Json.ParseException, BadReportException {
            String text = string(v, where);
            Instant at = IsoTime.parse(text);
            if (at == null) {
                throw new BadReportException(where + " is not an ISO-8601 time: \"" + text + "\"");
            }
            return at;
        }

        private Instant optionalInstant(JsonReader.Token v, String where)
                throws IOException, Json.ParseException, BadReportException {
            return v == JsonReader.Token.NULL ? null : instant(v, where);
        }
    }
}
