package dev.ncclguard.json;

import dev.ncclguard.config.TextFile;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A strict JSON reader (RFC 8259, nothing more) for reports and for NCCL's RAS answers: objects
 * become LinkedHashMaps, arrays Lists, integers Long (BigDecimal beyond), other numbers Double.
 * Strict, because a report cut short by a crash or a full disk must be named as such: no trailing
 * commas, no comments, no duplicate keys, nothing after the value. No library: the agent jar
 * brings none onto an application's class path.
 */
public final class Json {
    private static final int MAX_DEPTH = 256;

    private final String text;
    private int pos;

    /** A fault and where: line and column count from 1. */
    public static final class ParseException extends Exception {
        private static final long serialVersionUID = 1L;
        public final int line;
        public final int column;
        public final boolean truncated;

        ParseException(String message, int line, int column, boolean truncated) {
            super(message + " at line " + line + ", column " + column);
            this.line = line;
            this.column = column;
            this.truncated = truncated;
        }
    }

    private Json(String text) {
        this.text = text;
    }

    /** Decodes strict UTF-8, then parses. */
    public static Object parse(byte[] bytes) throws ParseException {
        String text;
        try {
            text = TextFile.decode(bytes);
        } catch (TextFile.NotUtf8 e) {
            // at the fault's own place: a report cut by a crash is named apart from one that is not text
            throw new ParseException("not UTF-8 text", e.line, e.column, false);
        }
        return parse(text);
    }

    public static Object parse(String text) throws ParseException {
        Json json = new Json(text);
        json.skipSpace();
        if (json.pos == text.length()) {
            throw json.error(text.isEmpty() ? "empty file" : "no JSON value, only white space", true);
        }
        Object value = json.value(0);
        json.skipSpace();
        if (json.pos < text.length()) {
            throw json.error("unexpected " + json.describe(json.pos) + " after the end of the JSON value", false);
        }
        return value;
    }

    private Object value(int depth) throws ParseException {
        if (depth > MAX_DEPTH) {
            throw error("nested deeper than " + MAX_DEPTH, false);
        }
        char c = peek("a value");
        switch (c) {
            case '{':
                return object(depth);
            case '[':
                return array(depth);
            case '"':
                return string();
            case 't':
                return literal("true", Boolean.TRUE);
            case 'f':
                return literal("false", Boolean.FALSE);
            case 'n':
                return literal("null", null);
            default:
                if (c == '-' || (c >= '0' && c <= '9')) {
                    return number();
                }
                throw error("unexpected " + describe(pos) + " where a value was expected", false);
        }
    }

    private Map<String, Object> object(int depth) throws ParseException {
        pos++; // '{'
        Map<String, Object> map = new LinkedHashMap<>();
        skipSpace();
        if (peek("'}' or a key") == '}') {
            pos++;
            return map;
        }
        while (true) {
            skipSpace();
            if (peek("a key") != '"') {
                throw error("unexpected " + describe(pos) + " where a key in double quotes was expected", false);
            }
            int keyAt = pos;
            String key = string();
            skipSpace();
            expect(':');
            skipSpace();
            Object value = value(depth + 1);
            if (map.containsKey(key)) {
                pos = keyAt;
                throw error("duplicate key \"" + key + "\"", false);
            }
            map.put(key, value);
            skipSpace();
            char c = peek("',' or '}'");
            pos++;
            if (c == '}') {
                return map;
            }
            if (c != ',') {
                pos--;
                throw error("unexpected " + describe(pos) + " where ',' or '}' was expected", false);
            }
        }
    }

    private List<Object> array(int depth) throws ParseException {
        pos++; // '['
        List<Object> list = new ArrayList<>();
        skipSpace();
        if (peek("']' or a value") == ']') {
            pos++;
            return list;
        }
        while (true) {
            skipSpace();
            list.add(value(depth + 1));
            skipSpace();
            char c = peek("',' or ']'");
            pos++;
            if (c == ']') {
                return list;
            }
            if (c != ',') {
                pos--;
                throw error("unexpected " + describe(pos) + " where ',' or ']' was expected", false);
            }
        }
    }

    private String string() throws ParseException {
        pos++; // '"'
        StringBuilder out = new StringBuilder();
        while (true) {
            if (pos >= text.length()) {
                throw error("unexpected end of input inside a string", true);
            }
            char c = text.charAt(pos++);
            if (c == '"') {
                return out.toString();
            }
            if (c < 0x20) {
                pos--;
                throw error("unescaped control character U+" + String.format("%04X", (int) c) + " in a string", false);
            }
            if (c != '\\') {
                out.append(c);
                continue;
            }
            if (pos >= text.length()) {
                throw error("unexpected end of input inside a string", true);
            }
            char e = text.charAt(pos++);
            switch (e) {
                case '"' -> out.append('"');
                case '\\' -> out.append('\\');
                case '/' -> out.append('/');
                case 'b' -> out.append('\b');
                case 'f' -> out.append('\f');
                case 'n' -> out.append('\n');
                case 'r' -> out.append('\r');
                case 't' -> out.append('\t');
                case 'u' -> {
                    if (pos + 4 > text.length()) {
                        pos = text.length();
                        throw error("unexpected end of input inside a \\u escape", true);
                    }
                    int code = 0;
                    for (int i = 0; i < 4; i++) {
                        int digit = Character.digit(text.charAt(pos), 16);
                        if (digit < 0) {
                            throw error("bad \\u escape", false);
                        }
                        code = code * 16 + digit;
                        pos++;
                    }
                    out.append((char) code);
                }
                default -> {
                    pos--;
                    throw error("bad escape \\" + e, false);
                }
            }
        }
    }

    private Object number() throws ParseException {
        int start = pos;
        if (text.charAt(pos) == '-') {
            pos++;
        }
        if (pos >= text.length()) {
            throw error("unexpected end of input inside a number", true);
        }
        if (text.charAt(pos) == '0') {
            pos++;
        } else if (!digits()) {
            throw error("unexpected " + describe(pos) + " in a number", false);
        }
        boolean integral = true;
        if (pos < text.length() && text.charAt(pos) == '.') {
            pos++;
            integral = false;
            if (!digits()) {
                throw pos >= text.length() ? error("unexpected end of input inside a number", true)
                        : error("unexpected " + describe(pos) + " in a number", false);
            }
        }
        if (pos < text.length() && (text.charAt(pos) == 'e' || text.charAt(pos) == 'E')) {
            pos++;
            integral = false;
            if (pos < text.length() && (text.charAt(pos) == '+' || text.charAt(pos) == '-')) {
                pos++;
            }
            if (!digits()) {
                throw pos >= text.length() ? error("unexpected end of input inside a number", true)
                        : error("unexpected " + describe(pos) + " in a number", false);
            }
        }
        String literal = text.substring(start, pos);
        if (integral) {
            try {
                return Long.parseLong(literal);
            } catch (NumberFormatException e) {
                return new BigDecimal(literal);
            }
        }
        return Double.parseDouble(literal);
    }

    private boolean digits() {
        int start = pos;
        while (pos < text.length() && text.charAt(pos) >= '0' && text.charAt(pos) <= '9') {
            pos++;
        }
        return pos > start;
    }

    private Object literal(String word, Object value) throws ParseException {
        for (int i = 0; i < word.length(); i++) {
            if (pos + i >= text.length()) {
                pos = text.length();
                throw error("unexpected end of input inside '" + word + "'", true);
            }
            if (text.charAt(pos + i) != word.charAt(i)) {
                pos += i;
                throw error("unexpected " + describe(pos) + " where '" + word + "' was expected", false);
            }
        }
        pos += word.length();
        return value;
    }

    private void expect(char c) throws ParseException {
        if (peek("'" + c + "'") != c) {
            throw error("unexpected " + describe(pos) + " where '" + c + "' was expected", false);
        }
        pos++;
    }

    private char peek(String expected) throws ParseException {
        if (pos >= text.length()) {
            throw error("unexpected end of input where " + expected + " was expected", true);
        }
        return text.charAt(pos);
    }

    private void skipSpace() {
        while (pos < text.length()) {
            char c = text.charAt(pos);
            if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
                return;
            }
            pos++;
        }
    }

    private String describe(int at) {
        char c = text.charAt(at);
        return c >= 0x20 && c < 0x7f ? "'" + c + "'" : "character U+" + String.format("%04X", (int) c);
    }

    private ParseException error(String message, boolean truncated) {
        int line = 1;
        int column = 1;
        for (int i = 0; i < Math.min(pos, text.length()); i++) {
            if (text.charAt(i) == '\n') {
                line++;
                column = 1;
            } else {
                column++;
            }
        }
        return new ParseException(message, line, column, truncated);
    }
}
