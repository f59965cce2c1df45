package dev.ncclguard.json;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class IsoTimeTest {
    private static String expected(long epochMillis) {
        return Instant.ofEpochMilli(epochMillis).truncatedTo(ChronoUnit.MILLIS).toString();
    }

    @Test
    void writesWhatInstantWritesToTheMillisecond() {
        long[] edges = {0, 1, -1, 999, 1000, 59_999, 86_399_999, 86_400_000, -86_400_000, 1_750_000_000_000L,
            1_750_000_000_120L, 951_782_400_000L /* 2000-02-29 */, 4_107_542_399_999L /* 2100-02-28T23:59:59.999 */,
            -62_167_219_200_000L /* 0000-01-01 */, -62_167_219_200_001L, 253_402_300_799_999L /* 9999-12-31 */,
            253_402_300_800_000L /* 10000-01-01 */, Long.MAX_VALUE / 1000, Long.MIN_VALUE / 1000};
        for (long t : edges) {
            assertEquals(expected(t), IsoTime.format(t), "epoch millis " + t);
        }
    }

    @Test
    void writesWhatInstantWritesForRandomTimesAndRunsWithinADay() {
        SplittableRandom random = new SplittableRandom(42);
        for (int i = 0; i < 100_000; i++) {
            long t = random.nextLong(-70_000_000_000_000L, 260_000_000_000_000L);
            assertEquals(expected(t), IsoTime.format(t), "epoch millis " + t);
            long sameDay = t + random.nextInt(1000); // the cached date part, and a change of day
            assertEquals(expected(sameDay), IsoTime.format(sameDay), "epoch millis " + sameDay);
        }
    }
}
