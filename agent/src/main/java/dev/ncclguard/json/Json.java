package dev.ncclguard.json;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * JSON as a tree, for reports and for NCCL's RAS answers: objects become LinkedHashMaps, arrays
 * Lists, integers Long (BigDecimal beyond), other numbers Double. Built on {@link JsonReader}, so
 * it is as strict: no trailing commas, no comments, no duplicate keys, nothing after the value,
 * UTF-8 checked. No library: the agent jar brings none onto an application's class path.
 */
public final class Json {
    /** A fault and where: line and column (in characters) count from 1. */
    public static final class ParseException extends Exception {
        private static final long serialVersionUID = 1L;
        public final long line;
        public final long column;
        /** The input ended where more was expected: a file cut short. */
        public final boolean truncated;

        ParseException(String message, long line, long column, boolean truncated) {
            super(message + " at line " + line + ", column " + column);
            this.line = line;
            this.column = column;
            this.truncated = truncated;
        }
    }

    private Json() {
    }

    /** The one value of UTF-8 bytes, whole. */
    public static Object parse(byte[] bytes) throws ParseException {
        JsonReader json = new JsonReader(bytes);
        try {
            Object value = value(json, json.next());
            json.next(); // END, or the fault of what follows the value
            return value;
        } catch (IOException e) {
            throw new UncheckedIOException(e); // bytes in memory: no read fails
        }
    }

    public static Object parse(String text) throws ParseException {
        return parse(text.getBytes(StandardCharsets.UTF_8));
    }

    /** The value that starts with {@code token}, just returned by {@code json}, read whole as a tree. */
    public static Object value(JsonReader json, JsonReader.Token token) throws IOException, ParseException {
        switch (token) {
            case STRING:
                return json.text();
            case NUMBER:
                if (json.fitsLong()) {
                    return json.longValue();
                }
                return json.integral() ? new BigDecimal(json.text()) : (Object) Double.parseDouble(json.text());
            case TRUE:
                return Boolean.TRUE;
            case FALSE:
                return Boolean.FALSE;
            case NULL:
                return null;
            case BEGIN_OBJECT:
                return members(json);
            case BEGIN_ARRAY:
                List<Object> list = new ArrayList<>();
                for (JsonReader.Token t = json.next(); t != JsonReader.Token.END_ARRAY; t = json.next()) {
                    list.add(value(json, t));
                }
                return list;
            default:
                throw new IllegalStateException("a value starts with " + token);
        }
    }

    /** The members of the object whose BEGIN_OBJECT {@code json} just returned, read whole. */
    public static Map<String, Object> members(JsonReader json) throws IOException, ParseException {
        Map<String, Object> map = new LinkedHashMap<>();
        for (JsonReader.Token t = json.next(); t == JsonReader.Token.NAME; t = json.next()) {
            String name = json.text();
            map.put(name, value(json, json.next()));
        }
        return map;
    }
}
