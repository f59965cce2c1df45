package dev.ncclguard.track;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class DetailsTest {
    private static final String[] KEYS = {"stream", "device"};

    @Test
    void keepsItsFieldsInOrderAndEqualsAnyMapOfThem() {
        Details d = Details.of(KEYS, "0x99", 1);

        assertEquals(List.of("stream", "device"), List.copyOf(d.keySet()));
        assertEquals("0x99", d.get("stream"));
        assertNull(d.get("rank"));
        Map<String, Object> same = new LinkedHashMap<>();
        same.put("stream", "0x99");
        same.put("device", 1);
        assertEquals(same, d);
        assertEquals(same.hashCode(), d.hashCode());
    }

    @Test
    void sameFieldsMeansInTheSameOrderToo() {
        Details d = Details.of(KEYS, "0x99", 1);

        assertTrue(d.sameFields(Details.of(new String[] {"stream", "device"}, "0x99", 1)));
        Details reordered = Details.of(new String[] {"device", "stream"}, 1, "0x99");
        assertEquals(d, reordered);
        assertFalse(d.sameFields(reordered));
        assertFalse(d.sameFields(Details.of(KEYS, "0x99", 1L)));
    }

    @Test
    void withAddsLastReplacesInPlaceAndRemovesOnNull() {
        Details d = Details.of(KEYS, "0x99", 1);

        assertEquals(List.of("stream", "device", "stillPending"), List.copyOf(d.with("stillPending", true).keySet()));
        Details replaced = d.with("stream", "0x98");
        assertEquals(List.of("stream", "device"), List.copyOf(replaced.keySet()));
        assertEquals("0x98", replaced.get("stream"));
        assertEquals("0x99", d.get("stream"), "the original is unchanged");
        assertEquals(List.of("device"), List.copyOf(d.with("stream", null).keySet()));
        assertSame(d, d.with("stillPending", null));
    }

    @Test
    void copyOfKeepsTheMapsOrderAndCannotBeChanged() {
        Map<String, Object> map = new LinkedHashMap<>();
        map.put("rank", 0);
        map.put("nranks", 2);
        map.put("commId", "9f3c");
        Details d = Details.copyOf(map);

        assertEquals(List.of("rank", "nranks", "commId"), List.copyOf(d.keySet()));
        assertSame(d, Details.copyOf(d));
        assertFalse(Details.copyOf(null).containsKey("rank"));
        assertThrows(UnsupportedOperationException.class, () -> d.put("x", 1));
    }
}
