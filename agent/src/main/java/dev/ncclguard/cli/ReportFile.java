package dev.ncclguard.cli;

import dev.ncclguard.json.Json;
import dev.ncclguard.json.ReportSchema.Summary;
import dev.ncclguard.json.ReportSchema;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * One JSON report as the commands read it, checked against schema ncclguard-report/1: every field
 * of the SPEC present with its type, the summary's counts agreeing with the leaks listed. The
 * additions of docs/spec.md ({@code suppressed}, {@code communicators}) are optional, so reports
 * of agents that predate them still read.
 *
 * @param communicators every communicator the process saw; null when the report predates the list
 */
record ReportFile(
        Path path,
        String agentVersion,
        long pid,
        String host,
        String action,
        Instant startedAt,
        Instant writtenAt,
        Summary summary,
        List<LeakEntry> leaks,
        List<LeakEntry> suppressed,
        List<CommEntry> communicators) {

    static final String SCHEMA = ReportSchema.NAME;

    /** An entry of {@code leaks} or {@code suppressed}; {@code suppression} is the rule, for the latter. */
    record LeakEntry(String kind, String handle, String api, String bridge, String thread, Instant createdAt,
            List<String> stack, Map<String, Object> details, String cleanup, String suppression) {

        Integer rank() {
            return integer(details.get("rank"));
        }

        Integer nranks() {
            return integer(details.get("nranks"));
        }

        String commId() {
            Object id = details.get("commId");
            return id instanceof String s ? s : null;
        }

        String topFrame() {
            return stack.isEmpty() ? null : stack.get(0);
        }
    }

    /** An entry of {@code communicators}. */
    record CommEntry(String commId, Integer rank, Integer nranks, Integer device, String handle, String api,
            String thread, Instant createdAt, Instant releasedAt, String releasedBy, boolean leaked,
            boolean suppressed, String cleanup) {
    }

    /** A report that cannot be read or is not a whole ncclguard report; the message says why. */
    static final class BadReportException extends Exception {
        private static final long serialVersionUID = 1L;

        BadReportException(String message) {
            super(message);
        }
    }

    /** The same report read from another file; with null, what compares equal to its copies. */
    ReportFile withPath(Path other) {
        return new ReportFile(other, agentVersion, pid, host, action, startedAt, writtenAt, summary, leaks, suppressed,
                communicators);
    }

    boolean hasLeaks() {
        return !leaks.isEmpty();
    }

    /** "pid 4242 on gpu-01" */
    String process() {
        return "pid " + pid + " on " + host;
    }

    static ReportFile read(Path path) throws BadReportException {
        byte[] bytes;
        try {
            bytes = Files.readAllBytes(path);
        } catch (IOException e) {
            throw new BadReportException("cannot read: " + ReportInputs.reason(e));
        }
        Object root;
        try {
            root = Json.parse(bytes);
        } catch (Json.ParseException e) {
            throw new BadReportException((e.truncated ? "truncated or malformed JSON: " : "malformed JSON: ")
                    + e.getMessage());
        }
        return of(path, root);
    }

    static ReportFile of(Path path, Object root) throws BadReportException {
        Fields r = Fields.object(root, "the report");
        String schema = r.string("schema");
        if (!SCHEMA.equals(schema)) {
            throw new BadReportException("not an ncclguard report: schema is \"" + schema + "\", expected \"" + SCHEMA + "\"");
        }
        Fields s = r.object(ReportSchema.SUMMARY);
        long[] counts = new long[Summary.FIELDS.size()];
        for (int i = 0; i < counts.length; i++) {
            String field = Summary.FIELDS.get(i);
            counts[i] = field.equals(Summary.OPTIONAL) && !s.has(field) ? 0 : s.count(field);
        }
        Summary summary = Summary.of(counts);
        List<LeakEntry> leaks = leaks(r, "leaks", true);
        List<LeakEntry> suppressed = r.has("suppressed") ? leaks(r, "suppressed", false) : List.of();
        agree(summary.leakedComms(), leaks, "comm", "leakedComms");
        agree(summary.pendingEvents(), leaks, "event", "pendingEvents");
        agree(summary.unsyncedStreams(), leaks, "stream", "unsyncedStreams");
        if (r.has("suppressed") && s.has(Summary.OPTIONAL) && summary.suppressed() != suppressed.size()) {
            throw new BadReportException("summary.suppressed is " + summary.suppressed() + " but suppressed lists "
                    + suppressed.size());
        }
        List<CommEntry> comms = null;
        if (r.has("communicators")) {
            comms = new ArrayList<>();
            List<Object> list = r.array("communicators");
            for (int i = 0; i < list.size(); i++) {
                Fields c = Fields.object(list.get(i), "communicators[" + i + "]");
                comms.add(new CommEntry(c.optionalString("commId"), c.optionalInt("rank"), c.optionalInt("nranks"),
                        c.optionalInt("device"), c.string("handle"), c.string("api"), c.string("thread"),
                        c.instant("createdAt"), c.optionalInstant("releasedAt"), c.optionalString("releasedBy"),
                        c.bool("leaked"), c.has("suppressed") && c.bool("suppressed"), c.optionalString("cleanup")));
            }
        }
        return new ReportFile(path, r.string("agentVersion"), r.count("pid"), r.string("host"), r.string("action"),
                r.instant("startedAt"), r.instant("writtenAt"), summary, leaks, suppressed, comms);
    }

    private static List<LeakEntry> leaks(Fields report, String field, boolean counted) throws BadReportException {
        List<Object> list = report.array(field);
        List<LeakEntry> out = new ArrayList<>(list.size());
        for (int i = 0; i < list.size(); i++) {
            Fields l = Fields.object(list.get(i), field + "[" + i + "]");
            String kind = l.string("kind");
            if (!kind.equals("comm") && !kind.equals("event") && !kind.equals("stream")) {
                throw new BadReportException(field + "[" + i + "].kind is \"" + kind + "\", expected comm, event or stream");
            }
            List<String> stack = new ArrayList<>();
            List<Object> frames = l.array("stack");
            for (int f = 0; f < frames.size(); f++) {
                if (!(frames.get(f) instanceof String frame)) {
                    throw new BadReportException(field + "[" + i + "].stack[" + f + "] is not a string");
                }
                stack.add(frame);
            }
            out.add(new LeakEntry(kind, l.string("handle"), l.string("api"), l.string("bridge"), l.string("thread"),
                    l.instant("createdAt"), List.copyOf(stack), l.object("details").map(), l.string("cleanup"),
                    counted ? null : l.optionalString("suppression")));
        }
        return List.copyOf(out);
    }

    private static void agree(long count, List<LeakEntry> leaks, String kind, String field) throws BadReportException {
        long listed = leaks.stream().filter(l -> l.kind().equals(kind)).count();
        if (listed != count) {
            throw new BadReportException("summary." + field + " is " + count + " but leaks lists " + listed
                    + " of kind " + kind);
        }
    }

    static Integer integer(Object value) {
        return value instanceof Long n && n >= Integer.MIN_VALUE && n <= Integer.MAX_VALUE ? (int) (long) n : null;
    }

    /** Typed access to one JSON object, with the fault named by its place in the report. */
    static final class Fields {
        private final Map<String, Object> map;
        private final String where;

        private Fields(Map<String, Object> map, String where) {
            this.map = map;
            this.where = where;
        }

        @SuppressWarnings("unchecked")
        static Fields object(Object value, String where) throws BadReportException {
            if (!(value instanceof Map<?, ?>)) {
                throw new BadReportException(where + " is not a JSON object");
            }
            return new Fields((Map<String, Object>) value, where);
        }

        Map<String, Object> map() {
            return java.util.Collections.unmodifiableMap(map);
        }

        boolean has(String key) {
            return map.containsKey(key);
        }

        private String name(String key) {
            return where.equals("the report") ? key : where + "." + key;
        }

        private Object required(String key) throws BadReportException {
            if (!map.containsKey(key)) {
                throw new BadReportException("missing field " + name(key));
            }
            return map.get(key);
        }

        String string(String key) throws BadReportException {
            Object v = required(key);
            if (!(v instanceof String s)) {
                throw new BadReportException(name(key) + " is not a string");
            }
            return s;
        }

        String optionalString(String key) throws BadReportException {
            Object v = map.get(key);
            if (v != null && !(v instanceof String)) {
                throw new BadReportException(name(key) + " is not a string");
            }
            return (String) v;
        }

        long count(String key) throws BadReportException {
            Object v = required(key);
            if (!(v instanceof Long n) || n < 0) {
                throw new BadReportException(name(key) + " is not a whole number of 0 or more");
            }
            return n;
        }

        Integer optionalInt(String key) throws BadReportException {
            Object v = map.get(key);
            if (v == null) {
                return null;
            }
            Integer i = integer(v);
            if (i == null) {
                throw new BadReportException(name(key) + " is not an integer");
            }
            return i;
        }

        boolean bool(String key) throws BadReportException {
            Object v = required(key);
            if (!(v instanceof Boolean b)) {
                throw new BadReportException(name(key) + " is not true or false");
            }
            return b;
        }

        Instant instant(String key) throws BadReportException {
            return parseInstant(key, string(key));
        }

        Instant optionalInstant(String key) throws BadReportException {
            String text = optionalString(key);
            return text == null ? null : parseInstant(key, text);
        }

        private Instant parseInstant(String key, String text) throws BadReportException {
            try {
                return Instant.parse(text);
            } catch (DateTimeParseException e) {
                throw new BadReportException(name(key) + " is not an ISO-8601 time: \"" + text + "\"");
            }
        }

        Fields object(String key) throws BadReportException {
            return Fields.object(required(key), name(key));
        }

        @SuppressWarnings("unchecked")
        List<Object> array(String key) throws BadReportException {
            Object v = required(key);
            if (!(v instanceof List<?>)) {
                throw new BadReportException(name(key) + " is not a JSON array");
            }
            return (List<Object>) v;
        }
    }
}
