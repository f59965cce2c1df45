package dev.ncclguard.json;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.ncclguard.catalog.Kind;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

class ReportSchemaTest {
    @Test
    void theSummarysFieldsAreItsComponentsInOrder() {
        List<String> components = Arrays.stream(ReportSchema.Summary.class.getRecordComponents())
                .map(c -> c.getName()).toList();
        assertEquals(components, ReportSchema.Summary.FIELDS);
    }

    @Test
    void eachKindsCountIsTheSummaryFieldItNames() {
        long[] values = new long[ReportSchema.Summary.FIELDS.size()];
        for (int i = 0; i < values.length; i++) {
            values[i] = 100 + i;
        }
        ReportSchema.Summary s = ReportSchema.Summary.of(values);
        long all = 0;
        for (Kind k : Kind.values()) {
            assertEquals(100 + ReportSchema.Summary.FIELDS.indexOf(k.summaryField()), s.leaked(k), k.word());
            all += s.leaked(k);
        }
        assertEquals(all, s.leaks());
    }
}
