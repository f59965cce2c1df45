package dev.ncclguard.catalog;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import org.junit.jupiter.api.Test;

class KindTest {
    @Test
    void eachKindIsReadBackFromItsReportWordAndNoOtherWordIsAKind() {
        for (Kind k : Kind.values()) {
            assertEquals(k, Kind.of(k.word()));
        }
        assertNull(Kind.of("Comm"));
        assertNull(Kind.of("communicator"));
    }

    @Test
    void leaksAreCountedInTheirKindsWords() {
        assertEquals("1 leaked communicator", Kind.COMM.count(1));
        assertEquals("2 unsynchronized streams", Kind.STREAM.count(2));
        assertEquals("0 pending events", Kind.EVENT.count(0));
        // memory is titled by what it is and counted by allocation
        assertEquals("Unfreed NCCL memory", Kind.MEMORY.heading());
        assertEquals("3 unfreed NCCL allocations", Kind.MEMORY.count(3));
        assertEquals("Leaked device communicator", Kind.DEVCOMM.heading());
    }
}
