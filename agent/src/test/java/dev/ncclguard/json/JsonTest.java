package dev.ncclguard.json;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

class JsonTest {
    @Test
    void readsEveryJsonTypeKeepingKeyOrder() throws Exception {
        Object v = Json.parse("{\"b\": [1, -2, 3.5, 1e3, true, false, null], \"a\": {\"s\": \"x\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\ud83d\\ude00\"},"
                + " \"big\": 123456789012345678901234567890}");
        Map<?, ?> map = assertInstanceOf(Map.class, v);
        assertEquals(List.of("b", "a", "big"), List.copyOf(map.keySet()));
        assertEquals(List.of(1L, -2L, 3.5, 1000.0, true, false), ((List<?>) map.get("b")).subList(0, 6));
        assertNull(((List<?>) map.get("b")).get(6));
        assertEquals("x\"\\/\b\f\n\r\té\uD83D\uDE00", ((Map<?, ?>) map.get("a")).get("s"));
        assertEquals(new BigDecimal("123456789012345678901234567890"), map.get("big"));
    }

    static Stream<Arguments> forbidden() {
        return Stream.of(
                Arguments.of("{\"a\": 1,}", "unexpected '}' where a key in double quotes was expected at line 1, column 9"),
                Arguments.of("[1, 2,]", "unexpected ']' where a value was expected at line 1, column 7"),
                Arguments.of("{\"a\": 1} x", "unexpected 'x' after the end of the JSON value at line 1, column 10"),
                Arguments.of("{\"a\": 1, \"a\": 2}", "duplicate key \"a\" at line 1, column 10"),
                Arguments.of("// c\n{}", "unexpected '/' where a value was expected at line 1, column 1"),
                Arguments.of("{'a': 1}", "unexpected ''' where a key in double quotes was expected at line 1, column 2"),
                Arguments.of("[01]", "unexpected '1' where ',' or ']' was expected at line 1, column 3"),
                Arguments.of("[1.]", "unexpected ']' in a number at line 1, column 4"),
                Arguments.of("[NaN]", "unexpected 'N' where a value was expected at line 1, column 2"),
                Arguments.of("[tru]", "unexpected ']' where 'true' was expected at line 1, column 5"),
                Arguments.of("\"a\\x\"", "bad escape \\x at line 1, column 4"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("forbidden")
    void strictAboutWhatRfc8259Forbids(String text, String message) {
        Json.ParseException e = assertThrows(Json.ParseException.class, () -> Json.parse(text));
        assertEquals(message, e.getMessage());
        assertFalse(e.truncated);
    }

    @Test
    void controlCharacterInAStringIsRefused() {
        Json.ParseException e = assertThrows(Json.ParseException.class, () -> Json.parse("[\"a\nb\"]"));
        assertEquals("unescaped control character U+000A in a string at line 1, column 4", e.getMessage());
    }

    @Test
    void everyCutOfADocumentIsTruncatedNeverAValue() {
        String doc = "{\n  \"schema\": \"ncclguard-report/1\",\n  \"pid\": 4242,\n  \"ok\": true,\n"
                + "  \"leaks\": [ { \"stack\": [\"a.B.c(B.java:1)\"], \"x\": -1.5e-3, \"n\": null } ]\n}\n";
        for (int cut = 0; cut < doc.strip().length(); cut++) {
            String part = doc.substring(0, cut);
            Json.ParseException e = assertThrows(Json.ParseException.class, () -> Json.parse(part), part);
            assertTrue(e.truncated, "cut at " + cut + ": " + e.getMessage());
        }
    }

    @Test
    void errorsSayWhere() {
        Json.ParseException e = assertThrows(Json.ParseException.class, () -> Json.parse("{\n  \"a\": [1,\n"));
        assertEquals("unexpected end of input where a value was expected at line 3, column 1", e.getMessage());
        assertEquals(3, e.line);
    }

    @Test
    void emptyInputAndBadUtf8AreNamed() {
        assertEquals("empty file at line 1, column 1",
                assertThrows(Json.ParseException.class, () -> Json.parse("")).getMessage());
        byte[] latin1 = "{\"host\": \"caf\u00e9\"}".getBytes(StandardCharsets.ISO_8859_1);
        assertEquals("not UTF-8 text: byte 0x22 cannot be here at line 1, column 15",
                assertThrows(Json.ParseException.class, () -> Json.parse(latin1)).getMessage());
    }

    @Test
    void badUtf8DeepInADocumentIsNamedAtItsLineAndColumn() {
        byte[] head = "{\n  \"a\": \"\u00e9t\u00e9\",\n  \"b\": \"x".getBytes(StandardCharsets.UTF_8);
        byte[] doc = new byte[head.length + 3];
        System.arraycopy(head, 0, doc, 0, head.length);
        doc[head.length] = (byte) 0xC3; // a lead byte cut short by a plain one
        doc[head.length + 1] = '"';
        doc[head.length + 2] = '}';
        assertEquals("not UTF-8 text: byte 0x22 cannot be here at line 3, column 11",
                assertThrows(Json.ParseException.class, () -> Json.parse(doc)).getMessage());
    }

    @Test
    void deepNestingIsRefusedNotAStackOverflow() {
        String deep = "[".repeat(100_000);
        Json.ParseException e = assertThrows(Json.ParseException.class, () -> Json.parse(deep));
        assertTrue(e.getMessage().startsWith("nested deeper than 256"), e.getMessage());
    }

    @Test
    void aStringOfTheLimitIsReadWhole() throws Exception {
        String limit = "x".repeat(JsonReader.MAX_STRING);
        assertEquals(limit, Json.parse("\"" + limit + "\""));
    }

    @Test
    void aStringPastTheLimitIsAFaultAtItsStartBeforeItIsRead() throws Exception {
        // fed from a stream that never ends: the reader must stop at the limit, not buffer the rest
        java.io.InputStream endless = new java.io.InputStream() {
            private long served;

            @Override
            public int read() {
                return served++ == 0 ? '[' : served == 2 ? ' ' : served == 3 ? '"' : 'a';
            }

            @Override
            public int read(byte[] b, int off, int len) {
                for (int i = 0; i < len; i++) {
                    b[off + i] = (byte) read();
                }
                return len;
            }
        };
        JsonReader r = new JsonReader(endless);
        assertEquals(JsonReader.Token.BEGIN_ARRAY, r.next());
        Json.ParseException e = assertThrows(Json.ParseException.class, r::next);
        assertEquals("a string longer than 1,048,576 characters (1 MiB), longer than any the agent writes"
                + " at line 1, column 3", e.getMessage());
        assertFalse(e.truncated);
    }

    @Test
    void aKeyPastTheLimitIsAFaultToo() {
        String key = "k".repeat(JsonReader.MAX_STRING + 1);
        Json.ParseException e = assertThrows(Json.ParseException.class,
                () -> Json.parse("{\"" + key + "\": 1}"));
        assertTrue(e.getMessage().startsWith("a string longer than"), e.getMessage());
        assertEquals(2, e.column);
    }

    @Test
    void escapesCountTowardsTheLimit() {
        String s = "\\n".repeat(JsonReader.MAX_STRING / 2 + 1) + "\\u00e9".repeat(JsonReader.MAX_STRING / 2);
        assertThrows(Json.ParseException.class, () -> Json.parse("\"" + s + "\""));
    }
}
