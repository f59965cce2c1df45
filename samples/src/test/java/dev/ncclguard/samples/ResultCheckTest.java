package dev.ncclguard.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import org.junit.jupiter.api.Test;

class ResultCheckTest {
    private static float[] sums(int n, long start, int nranks) {
        float[] sums = new float[n];
        for (int i = 0; i < n; i++) {
            for (int r = 0; r < nranks; r++) {
                sums[i] += Rank.input(r, start + i);
            }
        }
        return sums;
    }

    @Test
    void theSumOfEveryRanksInputPasses() {
        assertNull(Rank.firstMismatch(sums(300, 1000, 4), 300, 1000, 4));
    }

    @Test
    void aWrongElementIsNamedWithItsIndexAndBothValues() {
        float[] actual = sums(300, 1000, 4);
        actual[17] += 1;
        assertEquals("element 1017 is " + actual[17] + ", expected " + (actual[17] - 1) + " (the sum of 4 ranks' inputs)",
                Rank.firstMismatch(actual, 300, 1000, 4));
    }

    @Test
    void oneRanksInputAloneIsNotTheSum() {
        float[] oneRank = sums(10, 0, 1);
        assertEquals("element 0 is 1.0, expected 3.0 (the sum of 2 ranks' inputs)", Rank.firstMismatch(oneRank, 10, 0, 2));
    }

    @Test
    void onlyTheFilledPartOfTheChunkIsCompared() {
        float[] chunk = new float[20];
        System.arraycopy(sums(10, 0, 2), 0, chunk, 0, 10);
        assertNull(Rank.firstMismatch(chunk, 10, 0, 2));
    }
}
