package dev.ncclguard.json;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.LocalDate;

/**
 * ISO-8601 UTC times from epoch milliseconds, exactly as {@code Instant.toString()} writes them
 * truncated to the millisecond ("2025-06-01T10:00:00Z", "2025-06-01T10:00:00.120Z"), without a
 * formatter per call: a report writes one per leak, 100,000 at a time. The date part of the last
 * day seen is kept, so the usual run of times of one day costs a few divisions each.
 */
public final class IsoTime {
    /** The longest time written here: "yyyy-mm-ddThh:mm:ss.SSSZ"; other years go through Instant. */
    public static final int MAX_LENGTH = 24;
    private static final long MILLIS_PER_DAY = 86_400_000L;
    /** 0000-01-01 and 10000-01-01 in days since the epoch: Instant writes other years with a sign or a fifth digit. */
    private static final long FIRST_DAY = LocalDate.of(0, 1, 1).toEpochDay();
    private static final long END_DAY = LocalDate.of(10_000, 1, 1).toEpochDay();

    /** The date part, "yyyy-mm-ddT", of one day; replaced whole, so a racing reader sees one day or the other. */
    private record Day(long epochDay, byte[] text) {
    }

    private static volatile Day lastDay = day(0);

    private IsoTime() {
    }

    /** ISO-8601 to the millisecond, UTC; an instant beyond a long of milliseconds as Instant prints it, truncated. */
    public static String format(java.time.Instant instant) {
        try {
            return format(instant.toEpochMilli());
        } catch (ArithmeticException e) {
            return instant.truncatedTo(java.time.temporal.ChronoUnit.MILLIS).toString();
        }
    }

    public static String format(long epochMillis) {
        byte[] out = new byte[MAX_LENGTH];
        int n = write(epochMillis, out, 0);
        return n < 0 ? Instant.ofEpochMilli(epochMillis).toString() : new String(out, 0, n, StandardCharsets.ISO_8859_1);
    }

    /**
     * Writes the time as ASCII at {@code out[at]} ({@link #MAX_LENGTH} bytes free) and returns the
     * index after it, or -1 for a year outside 0-9999 (nothing written: use {@link #format}).
     */
    public static int write(long epochMillis, byte[] out, int at) {
        long epochDay = Math.floorDiv(epochMillis, MILLIS_PER_DAY);
        if (epochDay < FIRST_DAY || epochDay >= END_DAY) {
            return -1;
        }
        Day day = lastDay;
        if (day.epochDay != epochDay) {
            day = day(epochDay);
            lastDay = day;
        }
        System.arraycopy(day.text, 0, out, at, day.text.length);
        int i = at + day.text.length;
        int millisOfDay = (int) Math.floorMod(epochMillis, MILLIS_PER_DAY);
        int seconds = millisOfDay / 1000;
        i = two(out, i, seconds / 3600);
        out[i++] = ':';
        i = two(out, i, seconds / 60 % 60);
        out[i++] = ':';
        i = two(out, i, seconds % 60);
        int millis = millisOfDay % 1000;
        if (millis != 0) {
            out[i++] = '.';
            out[i++] = (byte) ('0' + millis / 100);
            out[i++] = (byte) ('0' + millis / 10 % 10);
            out[i++] = (byte) ('0' + millis % 10);
        }
        out[i++] = 'Z';
        return i;
    }

    private static Day day(long epochDay) {
        LocalDate date = LocalDate.ofEpochDay(epochDay);
        byte[] text = new byte[11];
        int year = date.getYear();
        text[0] = (byte) ('0' + year / 1000);
        text[1] = (byte) ('0' + year / 100 % 10);
        text[2] = (byte) ('0' + year / 10 % 10);
        text[3] = (byte) ('0' + year % 10);
        text[4] = '-';
        two(text, 5, date.getMonthValue());
        text[7] = '-';
        two(text, 8, date.getDayOfMonth());
        text[10] = 'T';
        return new Day(epochDay, text);
    }

    private static int two(byte[] out, int at, int value) {
        out[at] = (byte) ('0' + value / 10);
        out[at + 1] = (byte) ('0' + value % 10);
        return at + 2;
    }
}
