package dev.ncclguard.cli;

import java.io.IOException;
import java.io.OutputStream;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;

/**
 * JSON written as it is made, for the CLI's own outputs (merge --json, --trace): objects and arrays
 * opened and closed in order, commas and escapes taken care of. {@code pretty} puts one member a
 * line, two spaces a level; otherwise an array's elements go one a line and nothing else breaks,
 * which keeps a trace of thousands of events small and still diffable. Any Java string becomes
 * valid JSON: quotes, backslashes, control characters, U+2028/2029 and unpaired surrogates escaped.
 */
final class JsonWriter {
    private final Writer out;
    private final boolean pretty;
    private int depth;
    /** Per open level: whether something was written in it, and whether it is an object. */
    private final boolean[] written = new boolean[64];
    private final boolean[] object = new boolean[64];
    private boolean afterName;

    JsonWriter(OutputStream out, boolean pretty) {
        this.out = new OutputStreamWriter(out, StandardCharsets.UTF_8);
        this.pretty = pretty;
    }

    JsonWriter beginObject() throws IOException {
        return open('{', true);
    }

    JsonWriter endObject() throws IOException {
        return close('}');
    }

    JsonWriter beginArray() throws IOException {
        return open('[', false);
    }

    JsonWriter endArray() throws IOException {
        return close(']');
    }

    JsonWriter name(String name) throws IOException {
        separate();
        quote(name);
        out.write(pretty ? ": " : ":");
        afterName = true;
        return this;
    }

    JsonWriter value(String s) throws IOException {
        element();
        if (s == null) {
            out.write("null");
        } else {
            quote(s);
        }
        return this;
    }

    JsonWriter value(long n) throws IOException {
        element();
        out.write(Long.toString(n));
        return this;
    }

    JsonWriter value(double d) throws IOException {
        element();
        if (Double.isNaN(d) || Double.isInfinite(d)) {
            out.write("null");
        } else if (d == Math.rint(d) && Math.abs(d) < 1e15) {
            out.write(Long.toString((long) d));
        } else {
            out.write(Double.toString(d));
        }
        return this;
    }

    JsonWriter value(boolean b) throws IOException {
        element();
        out.write(b ? "true" : "false");
        return this;
    }

    JsonWriter nullValue() throws IOException {
        element();
        out.write("null");
        return this;
    }

    /** A value of what the report reader makes: String, Long, Double, Boolean, null, List, Map. */
    JsonWriter any(Object v) throws IOException {
        if (v == null) {
            return nullValue();
        }
        if (v instanceof String s) {
            return value(s);
        }
        if (v instanceof Long || v instanceof Integer) {
            return value(((Number) v).longValue());
        }
        if (v instanceof Number n) {
            element();
            out.write(n.toString());
            return this;
        }
        if (v instanceof Boolean b) {
            return value(b);
        }
        if (v instanceof List<?> list) {
            beginArray();
            for (Object e : list) {
                any(e);
            }
            return endArray();
        }
        if (v instanceof Map<?, ?> map) {
            beginObject();
            for (Map.Entry<?, ?> e : map.entrySet()) {
                name(String.valueOf(e.getKey())).any(e.getValue());
            }
            return endObject();
        }
        return value(v.toString());
    }

    JsonWriter strings(List<String> values) throws IOException {
        beginArray();
        for (String s : values) {
            value(s);
        }
        return endArray();
    }

    /** Ends the document with a newline and flushes (the stream stays open). */
    void finish() throws IOException {
        if (depth != 0) {
            throw new IllegalStateException("unclosed JSON: depth " + depth);
        }
        out.write('\n');
        out.flush();
    }

    private JsonWriter open(char c, boolean isObject) throws IOException {
        element();
        out.write(c);
        depth++;
        written[depth] = false;
        object[depth] = isObject;
        return this;
    }

    private JsonWriter close(char c) throws IOException {
        boolean any = written[depth];
        boolean wasObject = object[depth];
        depth--;
        if (any && (pretty || !wasObject)) {
            newline();
        }
        out.write(c);
        return this;
    }

    private void element() throws IOException {
        if (afterName) {
            afterName = false;
            return;
        }
        if (depth > 0) {
            separate();
        }
    }

    private void separate() throws IOException {
        if (written[depth]) {
            out.write(',');
        }
        written[depth] = true;
        if (pretty || !object[depth]) {
            newline();
        }
    }

    private void newline() throws IOException {
        out.write('\n');
        int spaces = pretty ? 2 * depth : 0;
        for (int i = 0; i < spaces; i++) {
            out.write(' ');
        }
    }

    private void quote(String s) throws IOException {
        out.write('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> out.write("\\\"");
                case '\\' -> out.write("\\\\");
                case '\n' -> out.write("\\n");
                case '\r' -> out.write("\\r");
                case '\t' -> out.write("\\t");
                default -> {
                    if (c < 0x20 || c == '\u2028' || c == '\u2029') {
                        out.write(String.format("\\u%04x", (int) c));
                    } else if (Character.isHighSurrogate(c) && i + 1 < s.length()
                            && Character.isLowSurrogate(s.charAt(i + 1))) {
                        out.write(c);
                        out.write(s.charAt(++i));
                    } else if (Character.isSurrogate(c)) {
                        out.write('\ufffd');
                    } else {
                        out.write(c);
                    }
                }
            }
        }
        out.write('"');
    }
}
