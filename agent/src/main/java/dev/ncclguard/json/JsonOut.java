package dev.ncclguard.json;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.time.Instant;
import java.util.Arrays;
import java.util.Collection;
import java.util.IdentityHashMap;
import java.util.Map;

/**
 * JSON written as UTF-8 straight into a buffer that is handed to the sink when full: no tree, no
 * String of the whole document; the one JSON writer of the agent (reports) and its CLI (merge
 * --json, --trace). {@link Layout#PRETTY}: two spaces per level, one member per line, "{}" and "[]"
 * when empty; {@link Layout#ELEMENT_LINES}: each array element on a line of its own and nothing
 * else broken, which keeps a trace of thousands of events small and still diffable. Any Java
 * string becomes valid JSON: quotes, backslashes and control characters are escaped, U+2028 and
 * U+2029 too (they end a line in JavaScript that embeds a report), and an unpaired surrogate
 * (which UTF-8 cannot encode) becomes U+FFFD.
 */
public final class JsonOut {
    /** Where lines break. */
    public enum Layout {
        /** One member or element a line, indented two spaces a level; ": " after a name. */
        PRETTY,
        /** Only an array's elements (and its closing bracket) start lines, none indented; ":" after a name. */
        ELEMENT_LINES
    }

    private static final int SIZE = 1 << 16;
    /** A fragment's: parts of a few hundred bytes, made a few dozen times a report. */
    private static final int FRAGMENT_SIZE = 512;
    /** Room kept free at the end of the buffer: the longest thing written without a check (a \\u escape, a time, a long). */
    private static final int MARGIN = 64;
    private static final byte[] NULL = {'n', 'u', 'l', 'l'};
    private static final byte[] TRUE = {'t', 'r', 'u', 'e'};
    private static final byte[] FALSE = {'f', 'a', 'l', 's', 'e'};
    /** A line break and the indentation of up to 15 levels, copied in one go. */
    private static final byte[] NEWLINE_AND_SPACES = ("\n" + " ".repeat(30)).getBytes(java.nio.charset.StandardCharsets.US_ASCII);
    private static final byte[] HEX = "0123456789abcdef".getBytes(java.nio.charset.StandardCharsets.US_ASCII);

    /** Enough for the names, apis, bridges, threads and streams of a report; unique strings do not stay. */
    private static final int MAX_REPEATED = 4096;

    private final OutputStream sink;
    private final boolean pretty;
    private final Map<String, byte[]> repeated = new IdentityHashMap<>();
    private final byte[] buf;
    private final int limit;
    private int pos;
    private int depth;
    /** Members written so far in each open object or array, and whether it is an array, by depth. */
    private int[] members = new int[16];
    private boolean[] array = new boolean[16];

    public JsonOut(OutputStream sink) {
        this(sink, Layout.PRETTY, SIZE);
    }

    public JsonOut(OutputStream sink, Layout layout) {
        this(sink, layout, SIZE);
    }

    private JsonOut(OutputStream sink, Layout layout, int size) {
        this.sink = sink;
        this.pretty = layout == Layout.PRETTY;
        this.buf = new byte[size];
        this.limit = size - MARGIN;
    }

    public JsonOut beginObject() {
        return open('{');
    }

    public JsonOut endObject() throws IOException {
        return close('}');
    }

    public JsonOut beginArray() {
        return open('[');
    }

    public JsonOut endArray() throws IOException {
        return close(']');
    }

    /** The next member of the open object: its name, then a value must follow. */
    public JsonOut name(String name) throws IOException {
        member();
        repeated(name);
        room();
        buf[pos++] = ':';
        if (pretty) {
            buf[pos++] = ' ';
        }
        return this;
    }

    /** The next element of the open array: a value must follow. */
    public JsonOut element() throws IOException {
        member();
        return this;
    }

    /**
     * A string that recurs by identity (a field name, an api, a thread name, a stream's hex handle
     * shared by its events): escaped and encoded once, then copied. Unique strings go through
     * {@link #string} once the cache is full.
     */
    public JsonOut repeated(String text) throws IOException {
        if (text == null) {
            return nullValue();
        }
        byte[] encoded = repeated.get(text);
        if (encoded == null) {
            if (repeated.size() >= MAX_REPEATED) {
                return string(text);
            }
            encoded = fragment(0, 0).string(text).fragmentBytes();
            repeated.put(text, encoded);
        }
        return bytes(encoded);
    }

    /** A handle as the JSON string "0x…", lower-case hex without leading zeros. */
    public JsonOut hexHandle(long handle) throws IOException {
        room();
        buf[pos++] = '"';
        buf[pos++] = '0';
        buf[pos++] = 'x';
        int digits = Math.max(1, (Long.SIZE - Long.numberOfLeadingZeros(handle) + 3) / 4);
        for (int i = digits - 1; i >= 0; i--) {
            buf[pos++] = HEX[(int) (handle >>> (4 * i)) & 0xf];
        }
        buf[pos++] = '"';
        return this;
    }

    public JsonOut string(CharSequence text) throws IOException {
        if (text == null) {
            return bytes(NULL);
        }
        room();
        buf[pos++] = '"';
        int n = text.length();
        for (int i = 0; i < n; i++) {
            if (pos > limit) {
                drain();
            }
            char c = text.charAt(i);
            if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
                buf[pos++] = (byte) c;
            } else if (c < 0x80) {
                escapeAscii(c);
            } else if (c < 0x800) {
                buf[pos++] = (byte) (0xc0 | c >> 6);
                buf[pos++] = (byte) (0x80 | c & 0x3f);
            } else if (c == '\u2028' || c == '\u2029') {
                unicodeEscape(c);
            } else if (Character.isHighSurrogate(c) && i + 1 < n && Character.isLowSurrogate(text.charAt(i + 1))) {
                int cp = Character.toCodePoint(c, text.charAt(++i));
                buf[pos++] = (byte) (0xf0 | cp >> 18);
                buf[pos++] = (byte) (0x80 | cp >> 12 & 0x3f);
                buf[pos++] = (byte) (0x80 | cp >> 6 & 0x3f);
                buf[pos++] = (byte) (0x80 | cp & 0x3f);
            } else {
                char d = Character.isSurrogate(c) ? '\uFFFD' : c;
                buf[pos++] = (byte) (0xe0 | d >> 12);
                buf[pos++] = (byte) (0x80 | d >> 6 & 0x3f);
                buf[pos++] = (byte) (0x80 | d & 0x3f);
            }
        }
        buf[pos++] = '"';
        return this;
    }

    private void escapeAscii(char c) {
        switch (c) {
            case '"' -> two('\\', '"');
            case '\\' -> two('\\', '\\');
            case '\n' -> two('\\', 'n');
            case '\r' -> two('\\', 'r');
            case '\t' -> two('\\', 't');
            case '\b' -> two('\\', 'b');
            case '\f' -> two('\\', 'f');
            default -> {
                if (c < 0x20) {
                    unicodeEscape(c);
                } else {
                    buf[pos++] = (byte) c; // DEL is legal in a JSON string
                }
            }
        }
    }

    private void two(char a, char b) {
        buf[pos++] = (byte) a;
        buf[pos++] = (byte) b;
    }

    private void unicodeEscape(char c) {
        buf[pos++] = '\\';
        buf[pos++] = 'u';
        buf[pos++] = HEX[c >> 12 & 0xf];
        buf[pos++] = HEX[c >> 8 & 0xf];
        buf[pos++] = HEX[c >> 4 & 0xf];
        buf[pos++] = HEX[c & 0xf];
    }

    public JsonOut number(long value) throws IOException {
        room();
        if (value == Long.MIN_VALUE) {
            return ascii(Long.toString(value));
        }
        if (value < 0) {
            buf[pos++] = '-';
            value = -value;
        }
        int digits = 1;
        for (long v = value / 10; v != 0; v /= 10) {
            digits++;
        }
        for (int i = pos + digits - 1; i >= pos; i--) {
            buf[i] = (byte) ('0' + value % 10);
            value /= 10;
        }
        pos += digits;
        return this;
    }

    public JsonOut bool(boolean value) throws IOException {
        return bytes(value ? TRUE : FALSE);
    }

    public JsonOut nullValue() throws IOException {
        return bytes(NULL);
    }

    /** ISO-8601 in UTC, to the millisecond, as a JSON string. */
    public JsonOut time(long epochMillis) throws IOException {
        room();
        buf[pos++] = '"';
        int end = IsoTime.write(epochMillis, buf, pos);
        if (end < 0) {
            ascii(IsoTime.format(epochMillis)); // a year before 0 or after 9999
            room();
        } else {
            pos = end;
        }
        buf[pos++] = '"';
        return this;
    }

    /** ISO-8601 in UTC, to the millisecond; null as null. */
    public JsonOut time(Instant instant) throws IOException {
        if (instant == null) {
            return nullValue();
        }
        long millis;
        try {
            millis = instant.toEpochMilli(); // truncates to the millisecond, as the report does
        } catch (ArithmeticException e) {
            return string(IsoTime.format(instant));
        }
        return time(millis);
    }

    /** Any value: strings, numbers, booleans, null, maps and collections of them; anything else as its string. */
    public JsonOut value(Object value) throws IOException {
        if (value == null) {
            return nullValue();
        } else if (value instanceof String text) {
            return repeated(text);
        } else if (value instanceof CharSequence text) {
            return string(text);
        } else if (value instanceof Boolean flag) {
            return bool(flag);
        } else if (value instanceof Integer || value instanceof Long || value instanceof Short || value instanceof Byte) {
            return number(((Number) value).longValue());
        } else if (value instanceof Number number) {
            return otherNumber(number);
        } else if (value instanceof Map<?, ?> map) {
            beginObject();
            for (Map.Entry<?, ?> field : map.entrySet()) {
                name(String.valueOf(field.getKey())).value(field.getValue());
            }
            return endObject();
        } else if (value instanceof Collection<?> items) {
            beginArray();
            for (Object item : items) {
                element().value(item);
            }
            return endArray();
        }
        return string(String.valueOf(value));
    }

    private JsonOut otherNumber(Number number) throws IOException {
        if (number instanceof BigInteger || number instanceof BigDecimal
                || (number instanceof Double || number instanceof Float) && Double.isFinite(number.doubleValue())) {
            return ascii(number.toString());
        }
        // NaN, infinities and unknown Number types have no JSON number form.
        return string(String.valueOf(number));
    }

    /** Bytes that are already JSON (a cached fragment), as they are. */
    public JsonOut bytes(byte[] json) throws IOException {
        if (json.length > buf.length - pos) {
            drain();
            if (json.length > buf.length) {
                sink.write(json);
                return this;
            }
        }
        System.arraycopy(json, 0, buf, pos, json.length);
        pos += json.length;
        return this;
    }

    /** The current nesting depth, for fragments cached at one depth. */
    public int depth() {
        return depth;
    }

    /**
     * A writer of a fragment: what it writes as if {@code members} members of the object or array at
     * {@code depth} were written already, to be taken with {@link #fragmentBytes} and copied with
     * {@link #bytes} into a writer in that state.
     */
    public static JsonOut fragment(int depth, int members) {
        JsonOut out = new JsonOut(new ByteArrayOutputStream(256), Layout.PRETTY, FRAGMENT_SIZE);
        out.depth = depth;
        if (depth >= out.members.length) {
            out.members = Arrays.copyOf(out.members, depth + 16);
            out.array = Arrays.copyOf(out.array, depth + 16);
        }
        out.members[depth] = members;
        return out;
    }

    /** What a {@link #fragment} writer wrote. */
    public byte[] fragmentBytes() throws IOException {
        drain();
        return ((ByteArrayOutputStream) sink).toByteArray();
    }

    public JsonOut newline() throws IOException {
        room();
        buf[pos++] = '\n';
        return this;
    }

    /** Hands what is buffered to the sink (which is not flushed or closed). */
    public void flush() throws IOException {
        drain();
    }

    private JsonOut ascii(String text) throws IOException {
        for (int i = 0; i < text.length(); i++) {
            if (pos > limit) {
                drain();
            }
            buf[pos++] = (byte) text.charAt(i);
        }
        return this;
    }

    private JsonOut open(char bracket) {
        // room() was made by name() or element(), or this is the document's start
        buf[pos++] = (byte) bracket;
        depth++;
        if (depth == members.length) {
            members = Arrays.copyOf(members, depth * 2);
            array = Arrays.copyOf(array, depth * 2);
        }
        members[depth] = 0;
        array[depth] = bracket == '[';
        return this;
    }

    private JsonOut close(char bracket) throws IOException {
        room();
        if (members[depth] > 0) {
            if (pretty) {
                newlineAndIndent(depth - 1);
            } else if (array[depth]) {
                buf[pos++] = '\n';
            }
        }
        depth--;
        buf[pos++] = (byte) bracket;
        return this;
    }

    private void member() throws IOException {
        room();
        if (members[depth]++ > 0) {
            buf[pos++] = ',';
        }
        if (pretty) {
            newlineAndIndent(depth);
        } else if (array[depth]) {
            buf[pos++] = '\n';
        }
    }

    private void newlineAndIndent(int levels) throws IOException {
        int spaces = 2 * levels;
        if (spaces < NEWLINE_AND_SPACES.length) {
            System.arraycopy(NEWLINE_AND_SPACES, 0, buf, pos, spaces + 1);
            pos += spaces + 1;
            return;
        }
        buf[pos++] = '\n';
        for (; spaces > 0; ) {
            room();
            int run = Math.min(spaces, 32);
            Arrays.fill(buf, pos, pos + run, (byte) ' ');
            pos += run;
            spaces -= run;
        }
    }

    private void room() throws IOException {
        if (pos > limit) {
            drain();
        }
    }

    private void drain() throws IOException {
        if (pos > 0) {
            sink.write(buf, 0, pos);
            pos = 0;
        }
    }
}
