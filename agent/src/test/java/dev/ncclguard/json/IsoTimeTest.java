package dev.ncclguard.json;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

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

    @Test
    void readsBackEveryTimeItWrites() {
        long[] edges = {0, 1, -1, 999, 1000, 86_399_999, -86_400_000, 1_750_000_000_120L, 951_782_400_000L,
            -62_167_219_200_000L /* 0000-01-01 */, -62_167_219_200_001L, 253_402_300_799_999L /* 9999-12-31 */,
            253_402_300_800_000L /* 10000-01-01 */};
        for (long t : edges) {
            assertEquals(Instant.ofEpochMilli(t), IsoTime.parse(IsoTime.format(t)), "epoch millis " + t);
        }
        SplittableRandom random = new SplittableRandom(7);
        for (int i = 0; i < 10_000; i++) {
            long t = random.nextLong(-62_167_219_200_000L, 253_402_300_800_000L);
            assertEquals(Instant.ofEpochMilli(t), IsoTime.parse(IsoTime.format(t)), "epoch millis " + t);
        }
    }

    @Test
    void readsWhatInstantReadsAndNothingElse() {
        // the written shape, read without a formatter, its near misses, and shapes only Instant.parse knows
        for (String t : new String[] {"2025-06-15T15:06:42Z", "2025-06-15T15:06:40.001Z", "6458-04-28T15:43:52.832Z",
            "2024-02-29T23:59:59.999999999Z", "1969-12-31T23:59:59.5Z", "0000-01-01T00:00:00Z",
            "+10000-01-01T00:00:00Z", "-0001-12-31T23:59:59Z", "2025-06-15T17:06:42+02:00", "2025-06-15t15:06:42z",
            "2016-12-31T23:59:60Z", "2025-06-15T24:00:00Z", "2025-06-15T15:06:42.Z", "2025-02-29T00:00:00Z",
            "2100-02-29T00:00:00Z", "2025-13-01T00:00:00Z", "2025-06-15T15:60:00Z", "2025-06-15T15:06:42.1234567890Z",
            "2025-06-15T15:06:42,5Z", "yesterday", "2025-06-15T15:06:42", "2025-06-15 15:06:42Z", ""}) {
            assertEquals(instant(t), IsoTime.parse(t), t);
        }
        assertNull(IsoTime.parse("2025-02-29T00:00:00Z"));
        assertNull(IsoTime.parse("2025-06-15T15:06:42"));
    }

    private static Instant instant(String text) {
        try {
            return Instant.parse(text);
        } catch (java.time.format.DateTimeParseException e) {
            return null;
        }
    }
}
