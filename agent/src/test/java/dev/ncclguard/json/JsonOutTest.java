package dev.ncclguard.json;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class JsonOutTest {
    private static String write(JsonOut.Layout layout) throws Exception {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        JsonOut out = new JsonOut(bytes, layout);
        out.beginObject();
        out.name("unit").string("ms");
        out.name("meta").beginObject().name("n").number(2).endObject();
        out.name("events").beginArray();
        out.element().beginObject().name("ts").number(0).name("stack").value(List.of("a", "b")).endObject();
        out.element().value(Map.of("ok", true));
        out.endArray();
        out.name("none").beginArray().endArray();
        out.endObject();
        out.flush();
        return bytes.toString(StandardCharsets.UTF_8);
    }

    @Test
    void prettyPutsEveryMemberOnAnIndentedLine() throws Exception {
        assertEquals("{\n  \"unit\": \"ms\",\n  \"meta\": {\n    \"n\": 2\n  },\n  \"events\": [\n    {\n"
                + "      \"ts\": 0,\n      \"stack\": [\n        \"a\",\n        \"b\"\n      ]\n    },\n    {\n"
                + "      \"ok\": true\n    }\n  ],\n  \"none\": []\n}", write(JsonOut.Layout.PRETTY));
    }

    @Test
    void elementLinesBreaksOnlyBetweenArrayElementsAndIndentsNothing() throws Exception {
        assertEquals("{\"unit\":\"ms\",\"meta\":{\"n\":2},\"events\":[\n{\"ts\":0,\"stack\":[\n\"a\",\n\"b\"\n]},\n"
                + "{\"ok\":true}\n],\"none\":[]}", write(JsonOut.Layout.ELEMENT_LINES));
    }
}
