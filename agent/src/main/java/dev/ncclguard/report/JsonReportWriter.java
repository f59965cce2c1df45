package dev.ncclguard.report;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Writes a report as pretty-printed UTF-8 JSON in the field order of schema ncclguard-report/1.
 * No library: the agent must not bring a JSON library onto an application's class path. Any Java
 * string becomes valid JSON: quotes, backslashes and control characters are escaped, and an
 * unpaired surrogate (which UTF-8 cannot encode) becomes U+FFFD.
 */
public final class JsonReportWriter {
    private static final String INDENT = "  ";
    private static final char REPLACEMENT = '\uFFFD';

    private JsonReportWriter() {
    }

    public static byte[] toBytes(Report report) {
        return toJson(report).getBytes(StandardCharsets.UTF_8);
    }

    public static String toJson(Report report) {
        StringBuilder out = new StringBuilder(1024 + 2048 * report.leaks().size());
        value(out, tree(report), 0);
        return out.append('\n').toString();
    }

    /** The report as ordered maps and lists: the schema's field order, in one place. */
    private static Map<String, Object> tree(Report report) {
        Map<String, Object> root = new LinkedHashMap<>();
        root.put("schema", report.schema());
        root.put("agentVersion", report.agentVersion());
        root.put("pid", report.pid());
        root.put("host", report.host());
        root.put("action", report.action());
        root.put("startedAt", iso(report.startedAt()));
        root.put("writtenAt", iso(report.writtenAt()));
        Report.Summary s = report.summary();
        Map<String, Object> summary = new LinkedHashMap<>();
        summary.put("commsCreated", s.commsCreated());
        summary.put("commsReleased", s.commsReleased());
        summary.put("leakedComms", s.leakedComms());
        summary.put("pendingEvents", s.pendingEvents());
        summary.put("unsyncedStreams", s.unsyncedStreams());
        summary.put("cleaned", s.cleaned());
        summary.put("cleanupFailed", s.cleanupFailed());
        summary.put("suppressed", s.suppressed());
        root.put("summary", summary);
        List<Object> leaks = new ArrayList<>(report.leaks().size());
        for (Leak leak : report.leaks()) {
            leaks.add(leak(leak));
        }
        root.put("leaks", leaks);
        // Additions to schema ncclguard-report/1 (docs/spec.md): after every field of the SPEC.
        List<Object> suppressed = new ArrayList<>(report.suppressed().size());
        for (Report.Suppressed entry : report.suppressed()) {
            Map<String, Object> fields = leak(entry.leak());
            fields.put("suppression", entry.rule());
            suppressed.add(fields);
        }
        root.put("suppressed", suppressed);
        List<Object> communicators = new ArrayList<>(report.communicators().size());
        for (Report.Communicator c : report.communicators()) {
            communicators.add(communicator(c));
        }
        root.put("communicators", communicators);
        root.put("communicatorsOmitted", report.communicatorsOmitted());
        return root;
    }

    private static Map<String, Object> leak(Leak leak) {
        Map<String, Object> entry = new LinkedHashMap<>();
        entry.put("kind", leak.kind().word());
        entry.put("handle", leak.handle());
        entry.put("api", leak.api());
        entry.put("bridge", leak.bridge());
        entry.put("thread", leak.thread());
        entry.put("createdAt", iso(leak.createdAt()));
        entry.put("stack", leak.stack());
        entry.put("details", leak.details());
        entry.put("cleanup", leak.cleanup().word());
        if (leak.cleanupNote() != null) {
            entry.put("cleanupNote", leak.cleanupNote());
        }
        return entry;
    }

    private static Map<String, Object> communicator(Report.Communicator c) {
        Map<String, Object> entry = new LinkedHashMap<>();
        entry.put("commId", c.commId());
        entry.put("rank", c.rank());
        entry.put("nranks", c.nranks());
        entry.put("device", c.device());
        entry.put("handle", c.handle());
        entry.put("api", c.api());
        entry.put("thread", c.thread());
        entry.put("createdAt", iso(c.createdAt()));
        entry.put("releasedAt", c.releasedAt() == null ? null : iso(c.releasedAt()));
        entry.put("releasedBy", c.releasedBy());
        entry.put("leaked", c.leaked());
        if (c.suppressed()) {
            entry.put("suppressed", true);
        }
        if (c.cleanup() != null) {
            entry.put("cleanup", c.cleanup().word());
        }
        return entry;
    }

    /** ISO-8601 in UTC, to the millisecond like the creation times the tracker records. */
    static String iso(Instant instant) {
        return instant.truncatedTo(ChronoUnit.MILLIS).toString();
    }

    private static void value(StringBuilder out, Object value, int depth) {
        if (value == null) {
            out.append("null");
        } else if (value instanceof CharSequence text) {
            string(out, text);
        } else if (value instanceof Boolean flag) {
            out.append(flag);
        } else if (value instanceof Number number) {
            number(out, number);
        } else if (value instanceof Map<?, ?> map) {
            object(out, map, depth);
        } else if (value instanceof Collection<?> items) {
            array(out, items, depth);
        } else {
            string(out, String.valueOf(value));
        }
    }

    private static void object(StringBuilder out, Map<?, ?> map, int depth) {
        if (map.isEmpty()) {
            out.append("{}");
            return;
        }
        out.append("{\n");
        int i = 0;
        for (Map.Entry<?, ?> field : map.entrySet()) {
            indent(out, depth + 1);
            string(out, String.valueOf(field.getKey()));
            out.append(": ");
            value(out, field.getValue(), depth + 1);
            out.append(++i < map.size() ? ",\n" : "\n");
        }
        indent(out, depth);
        out.append('}');
    }

    private static void array(StringBuilder out, Collection<?> items, int depth) {
        if (items.isEmpty()) {
            out.append("[]");
            return;
        }
        out.append("[\n");
        int i = 0;
        for (Object item : items) {
            indent(out, depth + 1);
            value(out, item, depth + 1);
            out.append(++i < items.size() ? ",\n" : "\n");
        }
        indent(out, depth);
        out.append(']');
    }

    private static void number(StringBuilder out, Number number) {
        if (number instanceof Integer || number instanceof Long || number instanceof Short
                || number instanceof Byte || number instanceof BigInteger || number instanceof BigDecimal) {
            out.append(number);
        } else if ((number instanceof Double || number instanceof Float) && Double.isFinite(number.doubleValue())) {
            out.append(number);
        } else {
            // NaN, infinities and unknown Number types have no JSON number form.
            string(out, String.valueOf(number));
        }
    }

    static void string(StringBuilder out, CharSequence text) {
        out.append('"');
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                case '\b' -> out.append("\\b");
                case '\f' -> out.append("\\f");
                // Legal in JSON, but they end a line in JavaScript source that embeds the report.
                case '\u2028' -> out.append("\\u2028");
                case '\u2029' -> out.append("\\u2029");
                default -> {
                    if (c < 0x20) {
                        out.append("\\u00").append(Character.forDigit(c >> 4, 16)).append(Character.forDigit(c & 0xf, 16));
                    } else if (Character.isHighSurrogate(c) && i + 1 < text.length()
                            && Character.isLowSurrogate(text.charAt(i + 1))) {
                        out.append(c).append(text.charAt(++i));
                    } else if (Character.isSurrogate(c)) {
                        out.append(REPLACEMENT);
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        out.append('"');
    }

    private static void indent(StringBuilder out, int depth) {
        for (int i = 0; i < depth; i++) {
            out.append(INDENT);
        }
    }
}
