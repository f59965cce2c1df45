package dev.ncclguard.catalog;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class CHeaderTest {

    @Test
    void everyFunctionHasOneWrapperLineInIdOrder() {
        String text = CHeader.generate();
        int from = 0;
        for (NativeFunction fn : Catalog.all()) {
            String line = "  X(" + fn.id() + ", " + fn.symbol() + ", ";
            int at = text.indexOf(line, from);
            assertTrue(at >= 0, fn.symbol());
            from = at;
        }
        assertTrue(text.contains("#define NG_FN_COUNT " + Catalog.size() + "\n"));
    }

    @Test
    void aStructByValueGoesToItsSlotAsItsAddressAndMakesTheFunctionUncallable() {
        String text = CHeader.generate();
        String line = text.lines().filter(l -> l.startsWith("  X(0, ncclCommInitRank, ")).findFirst().orElseThrow();
        assertTrue(line.contains("NG_SLOT_PTR(0, comm) NG_SLOT_INT(1, nranks) NG_SLOT_ADDR(2, commId) NG_SLOT_INT(3, rank), 0)"),
                line);
        String destroy = text.lines().filter(l -> l.contains(" ncclCommDestroy, ")).findFirst().orElseThrow();
        assertTrue(destroy.endsWith("NG_SLOT_PTR(0, comm), 1) \\"), destroy);
    }

    @Test
    void aConstHandleIsDeclaredConstAndItsSlotHoldsThePointer() {
        String line = CHeader.generate().lines().filter(l -> l.contains(" ncclCommRegister, ")).findFirst().orElseThrow();
        assertTrue(line.contains("(const ncclComm_t comm, void* buff, size_t size, void** handle), (comm, buff, size, handle), 4,"
                + " NG_SLOT_PTR(0, comm) NG_SLOT_PTR(1, buff) NG_SLOT_UINT(2, size) NG_SLOT_PTR(3, handle), 1)"), line);
    }

    @Test
    void positionsNameEveryRoleCommAndBytesLast() {
        String text = CHeader.generate();
        assertTrue(text.contains(" *   P(id, handle, parentComm, stream, event, rank, nranks, uniqueId, device, color, key,"
                + " count, rankList, comm, bytes) */"), text);
        int id = Catalog.lookup("ncclMemAlloc").id();
        assertTrue(text.contains("  P(" + id + ", 0, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 1) \\"), text);
    }

    @Test
    void theSlotsOfACallHaveRoomForTheFunctionWithTheMostParameters() {
        String text = CHeader.generate();
        int most = Catalog.all().stream().mapToInt(fn -> CHeader.parse(fn).size()).max().orElseThrow();
        assertEquals(9, CHeader.parse(Catalog.lookup("ncclReduceConfig")).size());
        assertTrue(most >= 9, "ncclReduceConfig has 9 parameters");
        assertTrue(text.contains("#define NG_MAX_ARGS " + most + "\n"), text);
    }

    @Test
    void functionsWithoutParametersForwardWithNone() {
        String line = CHeader.generate().lines().filter(l -> l.contains(" ncclGroupStart, ")).findFirst().orElseThrow();
        assertTrue(line.contains("NCCL, NG_EFFECT_GROUP_START, (void), (), 0, , 1)"), line);
    }
}
