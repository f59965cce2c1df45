package dev.ncclguard.json;

import dev.ncclguard.json.Json.ParseException;
import java.io.IOException;
import java.io.InputStream;

/**
 * A strict, streaming JSON reader (RFC 8259, nothing more) over UTF-8 bytes, the one JSON reader of
 * the agent and its CLI: the commands read a report of any size the agent can write (sizes:
 * docs/performance.md, "Sizes the code is shaped by") token by token, keeping only what they
 * need, and {@link Json} builds its tree on it. Strict, because a report cut short by a crash or a full disk must be named as such: no
 * trailing commas, no comments, no duplicate keys, nothing after the value, and bytes that are not
 * UTF-8 are a fault at their own line and column (columns count characters, not bytes).
 */
public final class JsonReader {
    public enum Token { BEGIN_OBJECT, END_OBJECT, BEGIN_ARRAY, END_ARRAY, NAME, STRING, NUMBER, TRUE, FALSE, NULL, END }

    private static final int MAX_DEPTH = 256;
    /** A key list is scanned for duplicates up to this size; reports' objects have a dozen keys. */
    private static final int MAX_KEYS_CHECKED = 4096;
    /** Strings up to this length are looked up among those seen before (a direct-mapped table). */
    private static final int MAX_INTERNED_LENGTH = 96;
    private static final int INTERNED = 4096;
    /**
     * The longest string read, in characters: a frame, a note or a host never comes near it, and a
     * longer one (a corrupt or foreign file) is a fault at its start, before it fills the heap.
     */
    public static final int MAX_STRING = 1 << 20;

    private static final int VALUE = 0;
    private static final int FIRST_IN_ARRAY = 1;
    private static final int FIRST_IN_OBJECT = 2;
    private static final int NAME = 3;
    private static final int AFTER_VALUE = 4;
    private static final int DONE = 5;

    private final InputStream in;
    private final byte[] buf;
    private int pos;
    private int lim;
    private boolean eof;
    /** Bytes before buf[0], for positions. */
    private long base;
    private long line = 1;
    /** Byte offset where the current line starts, and UTF-8 continuation bytes read on it since. */
    private long lineStart;
    private long continuations;
    private boolean sawValue;

    private int state = VALUE;
    private int depth;
    private final boolean[] inObject = new boolean[MAX_DEPTH + 2];
    /** The keys of each open object, for duplicates: a dozen per object in reports, compared interned. */
    private String[][] keys = new String[8][];
    private int[] keyCount = new int[8];
    /** Short strings seen before, reused: the keys and the values that repeat from leak to leak. */
    private final String[] interned = new String[INTERNED];
    private final char[][] internedChars = new char[INTERNED][];
    /** Whether a slot's string was found again since it was stored: a unique string does not evict it. */
    private final boolean[] internedHit = new boolean[INTERNED];

    private char[] chars = new char[256];
    private String text;
    private boolean integral;
    private long longValue;
    private boolean fitsLong;
    private long tokenLine;
    private long tokenColumn;

    public JsonReader(InputStream in) {
        this.in = in;
        this.buf = new byte[1 << 16];
    }

    /** Reads {@code bytes} in place: the whole input, no copy. */
    public JsonReader(byte[] bytes) {
        this.in = null;
        this.buf = bytes;
        this.lim = bytes.length;
        this.eof = true;
    }

    /** The next token; {@link Token#END} once the one top-level value was read whole. */
    public Token next() throws IOException, ParseException {
        while (true) {
            int c = skipSpace();
            mark();
            switch (state) {
                case DONE:
                    return Token.END;
                case AFTER_VALUE:
                    if (depth == 0) {
                        if (c < 0) {
                            state = DONE;
                            return Token.END;
                        }
                        throw error("unexpected " + describe(c) + " after the end of the JSON value", false);
                    }
                    if (c < 0) {
                        throw error("unexpected end of input where ',' or '" + (inObject[depth] ? '}' : ']')
                                + "' was expected", true);
                    }
                    if (c == ',') {
                        pos++;
                        state = inObject[depth] ? NAME : VALUE;
                        continue;
                    }
                    if (c == (inObject[depth] ? '}' : ']')) {
                        pos++;
                        return close();
                    }
                    throw error("unexpected " + describe(c) + " where ',' or '" + (inObject[depth] ? '}' : ']')
                            + "' was expected", false);
                case FIRST_IN_OBJECT:
                    if (c == '}') {
                        pos++;
                        return close();
                    }
                    return name(c, "'}' or a key");
                case NAME:
                    return name(c, "a key");
                case FIRST_IN_ARRAY:
                    if (c == ']') {
                        pos++;
                        return close();
                    }
                    return value(c, "']' or a value");
                default:
                    return value(c, "a value");
            }
        }
    }

    /** Reads past the value that starts with the token just returned (a whole object or array). */
    public void skip(Token token) throws IOException, ParseException {
        if (token != Token.BEGIN_OBJECT && token != Token.BEGIN_ARRAY) {
            return;
        }
        int target = depth - 1;
        while (depth > target) {
            next();
        }
    }

    /** Of a NAME or STRING: its text; of a NUMBER: its literal. */
    public String text() {
        return text;
    }

    /** Of a NUMBER: whether it has neither fraction nor exponent. */
    public boolean integral() {
        return integral;
    }

    /** Of an integral NUMBER: whether it fits a long, and its value. */
    public boolean fitsLong() {
        return integral && fitsLong;
    }

    public long longValue() {
        return longValue;
    }

    /** Where the last token started. */
    public long line() {
        return tokenLine;
    }

    public long column() {
        return tokenColumn;
    }

    private Token close() {
        depth--;
        state = AFTER_VALUE;
        return inObject[depth + 1] ? Token.END_OBJECT : Token.END_ARRAY;
    }

    private Token name(int c, String expected) throws IOException, ParseException {
        if (c < 0) {
            throw error("unexpected end of input where " + expected + " was expected", true);
        }
        if (c != '"') {
            throw error("unexpected " + describe(c) + " where a key in double quotes was expected", false);
        }
        long keyLine = tokenLine;
        long keyColumn = tokenColumn;
        pos++;
        String key = string();
        String[] seen = keys[depth];
        int count = keyCount[depth];
        if (count < MAX_KEYS_CHECKED) {
            for (int i = 0; i < count; i++) {
                if (seen[i] == key || seen[i].equals(key)) {
                    throw new ParseException("duplicate key \"" + key + "\"", keyLine, keyColumn, false);
                }
            }
            if (count == seen.length) {
                seen = java.util.Arrays.copyOf(seen, count * 2);
                keys[depth] = seen;
            }
            seen[count] = key;
            keyCount[depth] = count + 1;
        }
        int d = skipSpace();
        if (d < 0) {
            throw error("unexpected end of input where ':' was expected", true);
        }
        if (d != ':') {
            mark();
            throw error("unexpected " + describe(d) + " where ':' was expected", false);
        }
        pos++;
        text = key;
        tokenLine = keyLine;
        tokenColumn = keyColumn;
        state = VALUE;
        return Token.NAME;
    }

    private Token value(int c, String expected) throws IOException, ParseException {
        if (c < 0) {
            throw error(sawValue || depth > 0 ? "unexpected end of input where " + expected + " was expected"
                    : base + pos == 0 ? "empty file" : "no JSON value, only white space", true);
        }
        sawValue = true;
        switch (c) {
            case '{':
                pos++;
                return open(true);
            case '[':
                pos++;
                return open(false);
            case '"':
                pos++;
                text = string();
                state = AFTER_VALUE;
                return Token.STRING;
            case 't':
                literal("true");
                return Token.TRUE;
            case 'f':
                literal("false");
                return Token.FALSE;
            case 'n':
                literal("null");
                return Token.NULL;
            default:
                if (c == '-' || (c >= '0' && c <= '9')) {
                    number();
                    state = AFTER_VALUE;
                    return Token.NUMBER;
                }
                throw error("unexpected " + describe(c) + " where a value was expected", false);
        }
    }

    private Token open(boolean object) throws ParseException {
        if (depth == MAX_DEPTH) {
            throw error("nested deeper than " + MAX_DEPTH, false);
        }
        depth++;
        inObject[depth] = object;
        if (object) {
            if (depth >= keys.length) {
                keys = java.util.Arrays.copyOf(keys, keys.length * 2);
                keyCount = java.util.Arrays.copyOf(keyCount, keyCount.length * 2);
            }
            if (keys[depth] == null) {
                keys[depth] = new String[16];
            }
            keyCount[depth] = 0;
        }
        state = object ? FIRST_IN_OBJECT : FIRST_IN_ARRAY;
        return object ? Token.BEGIN_OBJECT : Token.BEGIN_ARRAY;
    }

    private void literal(String word) throws IOException, ParseException {
        for (int i = 0; i < word.length(); i++) {
            int c = peek();
            if (c < 0) {
                throw error("unexpected end of input inside '" + word + "'", true);
            }
            if (c != word.charAt(i)) {
                mark();
                throw error("unexpected " + describe(c) + " where '" + word + "' was expected", false);
            }
            pos++;
        }
        state = AFTER_VALUE;
    }

    private void number() throws IOException, ParseException {
        int n = 0;
        integral = true;
        fitsLong = true;
        boolean negative = false;
        long value = 0;
        int c = peek();
        if (c == '-') {
            negative = true;
            n = put(n, c);
            pos++;
        }
        c = peek();
        if (c < 0) {
            throw error("unexpected end of input inside a number", true);
        }
        if (c == '0') {
            n = put(n, c);
            pos++;
        } else if (c >= '1' && c <= '9') {
            while ((c = peek()) >= '0' && c <= '9') {
                int digit = c - '0';
                // accumulated negative, which reaches Long.MIN_VALUE
                if (value < (Long.MIN_VALUE + digit) / 10) {
                    fitsLong = false;
                } else {
                    value = value * 10 - digit;
                }
                n = put(n, c);
                pos++;
            }
        } else {
            mark();
            throw error("unexpected " + describe(c) + " in a number", false);
        }
        c = peek();
        if (c == '.') {
            integral = false;
            n = put(n, c);
            pos++;
            n = digits(n);
            c = peek();
        }
        if (c == 'e' || c == 'E') {
            integral = false;
            n = put(n, c);
            pos++;
            c = peek();
            if (c == '+' || c == '-') {
                n = put(n, c);
                pos++;
            }
            n = digits(n);
        }
        if (!negative) {
            if (value == Long.MIN_VALUE) {
                fitsLong = false;
            }
            value = -value;
        }
        longValue = value;
        text = new String(chars, 0, n);
    }

    private int digits(int n) throws IOException, ParseException {
        int c = peek();
        if (c < 0) {
            throw error("unexpected end of input inside a number", true);
        }
        if (c < '0' || c > '9') {
            mark();
            throw error("unexpected " + describe(c) + " in a number", false);
        }
        while ((c = peek()) >= '0' && c <= '9') {
            n = put(n, c);
            pos++;
        }
        return n;
    }

    private int put(int n, int c) {
        if (n == chars.length) {
            chars = java.util.Arrays.copyOf(chars, n * 2);
        }
        chars[n] = (char) c;
        return n + 1;
    }

    /** After the opening quote: the string's text, escapes decoded, UTF-8 checked. */
    private String string() throws IOException, ParseException {
        long startLine = tokenLine;
        long startColumn = tokenColumn;
        int n = 0;
        while (true) {
            if (n > MAX_STRING) {
                throw new ParseException("a string longer than " + String.format(java.util.Locale.ROOT, "%,d", MAX_STRING)
                        + " characters (1 MiB), longer than any the agent writes", startLine, startColumn, false);
            }
            if (pos == lim && !fill()) {
                mark();
                throw error("unexpected end of input inside a string", true);
            }
            // the common case: a run of printable ASCII within the buffer
            int p = pos;
            int end = lim;
            byte[] b = buf;
            int stop = Math.min(end, p + MAX_STRING + 1 - n);
            while (p < stop) {
                byte x = b[p];
                if (x < 0x20 || x == '"' || x == '\\') {
                    break; // negative bytes (non-ASCII) too
                }
                if (n == chars.length) {
                    chars = java.util.Arrays.copyOf(chars, n * 2);
                }
                chars[n++] = (char) x;
                p++;
            }
            pos = p;
            if (p == stop) {
                continue;
            }
            int c = b[p] & 0xff;
            if (c == '"') {
                pos++;
                return n <= MAX_INTERNED_LENGTH ? intern(n) : new String(chars, 0, n);
            }
            if (c == '\\') {
                pos++;
                n = escape(n);
            } else if (c < 0x20) {
                mark();
                throw error("unescaped control character U+" + String.format("%04X", c) + " in a string", false);
            } else {
                n = multiByte(n, c);
            }
        }
    }

    /**
     * chars[0, n) as a String, the same instance as the last time these characters were read: the
     * keys, kinds, apis, frames and times of a report repeat from leak to leak, and an instance
     * seen before has its hash computed already and compares by identity. A string that was found
     * again keeps its slot against one that was not (a leak's own handle).
     */
    private String intern(int n) {
        int h = 0;
        for (int i = 0; i < n; i++) {
            h = 31 * h + chars[i];
        }
        int slot = (h ^ (h >>> 11)) & (INTERNED - 1);
        char[] known = internedChars[slot];
        if (known != null && java.util.Arrays.equals(known, 0, known.length, chars, 0, n)) {
            internedHit[slot] = true;
            return interned[slot];
        }
        String fresh = new String(chars, 0, n);
        if (known == null || !internedHit[slot]) {
            interned[slot] = fresh;
            internedChars[slot] = java.util.Arrays.copyOf(chars, n);
        } else {
            internedHit[slot] = false; // it must be found again before the next newcomer takes the slot
        }
        return fresh;
    }

    private int escape(int n) throws IOException, ParseException {
        int e = peek();
        if (e < 0) {
            mark();
            throw error("unexpected end of input inside a string", true);
        }
        pos++;
        char out;
        switch (e) {
            case '"' -> out = '"';
            case '\\' -> out = '\\';
            case '/' -> out = '/';
            case 'b' -> out = '\b';
            case 'f' -> out = '\f';
            case 'n' -> out = '\n';
            case 'r' -> out = '\r';
            case 't' -> out = '\t';
            case 'u' -> {
                int code = 0;
                for (int i = 0; i < 4; i++) {
                    int h = peek();
                    if (h < 0) {
                        mark();
                        throw error("unexpected end of input inside a \\u escape", true);
                    }
                    int digit = Character.digit(h, 16);
                    if (digit < 0 || h > 0x7f) {
                        mark();
                        throw error("bad \\u escape", false);
                    }
                    code = code * 16 + digit;
                    pos++;
                }
                out = (char) code;
            }
            default -> {
                pos--;
                mark();
                throw error("bad escape \\" + (e >= 0x20 && e < 0x7f ? String.valueOf((char) e) : describe(e)), false);
            }
        }
        return put(n, out);
    }

    /** A UTF-8 sequence starting with {@code lead}: checked strictly (no overlong forms, no surrogates). */
    private int multiByte(int n, int lead) throws IOException, ParseException {
        mark();
        long leadLine = tokenLine;
        long leadColumn = tokenColumn;
        int length;
        int code;
        int min;
        if (lead >= 0xc2 && lead <= 0xdf) {
            length = 2;
            code = lead & 0x1f;
            min = 0x80;
        } else if (lead >= 0xe0 && lead <= 0xef) {
            length = 3;
            code = lead & 0x0f;
            min = 0x800;
        } else if (lead >= 0xf0 && lead <= 0xf4) {
            length = 4;
            code = lead & 0x07;
            min = 0x10000;
        } else {
            throw notUtf8(lead);
        }
        pos++;
        for (int i = 1; i < length; i++) {
            int c = peek();
            if (c < 0) {
                mark();
                throw error("unexpected end of input inside a string", true);
            }
            if ((c & 0xc0) != 0x80) {
                mark();
                throw notUtf8(c);
            }
            code = (code << 6) | (c & 0x3f);
            pos++;
            continuations++;
        }
        if (code < min || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) {
            throw new ParseException("not UTF-8 text: an encoding of U+" + String.format("%04X", code)
                    + " that UTF-8 does not allow", leadLine, leadColumn, false);
        }
        if (code >= 0x10000) {
            n = put(n, Character.highSurrogate(code));
            return put(n, Character.lowSurrogate(code));
        }
        return put(n, code);
    }

    private ParseException notUtf8(int b) {
        return new ParseException("not UTF-8 text: byte 0x" + String.format("%02X", b) + " cannot be here",
                tokenLine, tokenColumn, false);
    }

    /** The next byte that is not white space (unconsumed), or -1 at the end; counts lines. */
    private int skipSpace() throws IOException {
        while (true) {
            if (pos == lim && !fill()) {
                return -1;
            }
            int c = buf[pos] & 0xff;
            if (c == '\n') {
                pos++;
                line++;
                lineStart = base + pos;
                continuations = 0;
            } else if (c == ' ' || c == '\t' || c == '\r') {
                pos++;
            } else {
                return c;
            }
        }
    }

    private int peek() throws IOException {
        if (pos == lim && !fill()) {
            return -1;
        }
        return buf[pos] & 0xff;
    }

    private boolean fill() throws IOException {
        if (eof) {
            return false;
        }
        base += lim;
        pos = 0;
        lim = 0;
        while (lim == 0) {
            int n = in.read(buf, 0, buf.length);
            if (n < 0) {
                eof = true;
                return false;
            }
            lim = n;
        }
        return true;
    }

    /** The token (or fault) is at the current position. */
    private void mark() {
        tokenLine = line;
        tokenColumn = base + pos - lineStart - continuations + 1;
    }

    private ParseException error(String message, boolean truncated) {
        return new ParseException(message, tokenLine, tokenColumn, truncated);
    }

    private static String describe(int c) {
        if (c < 0) {
            return "end of input";
        }
        if (c >= 0x20 && c < 0x7f) {
            return "'" + (char) c + "'";
        }
        return c < 0x80 ? "character U+" + String.format("%04X", c) : "byte 0x" + String.format("%02X", c);
    }
}
