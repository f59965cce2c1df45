package dev.ncclguard.json;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.LocalDate;
import java.time.format.DateTimeParseException;

/**
 * ISO-8601 UTC times from epoch milliseconds, exactly as {@code Instant.toString()} writes them
 * truncated to the millisecond ("2025-06-01T10:00:00Z", "2025-06-01T10:00:00.120Z"), without a
 * formatter per call: a report writes one per leak, 100,000 at a time. The date part of the last
 * day seen is kept, so the usual run of times of one day costs a few divisions each. The reports'
 * times are read back here too ({@link #parse}), for the agent and its commands alike.
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

    /**
     * The instant an ISO-8601 time names, or null when the text is not one: the shape written here
     * (any fraction of 1 to 9 digits) read without a formatter, any other through {@link Instant#parse}.
     */
    public static Instant parse(String s) {
        // yyyy-MM-ddTHH:mm:ss[.fff...]Z, the shape of every time the agent writes
        int n = s.length();
        if (n >= 20 && s.charAt(n - 1) == 'Z' && s.charAt(4) == '-' && s.charAt(7) == '-' && s.charAt(10) == 'T'
                && s.charAt(13) == ':' && s.charAt(16) == ':') {
            int year = digits(s, 0, 4);
            int month = digits(s, 5, 7);
            int day = digits(s, 8, 10);
            int hour = digits(s, 11, 13);
            int minute = digits(s, 14, 16);
            int second = digits(s, 17, 19);
            int nanos = 0;
            boolean ok = year >= 0 && month >= 1 && month <= 12 && day >= 1 && day <= daysIn(year, month)
                    && hour >= 0 && hour < 24 && minute >= 0 && minute < 60 && second >= 0 && second < 60;
            if (ok && n > 20) {
                int fraction = n - 21;
                ok = s.charAt(19) == '.' && fraction >= 1 && fraction <= 9;
                int f = ok ? digits(s, 20, n - 1) : -1;
                ok = ok && f >= 0;
                if (ok) {
                    nanos = f;
                    for (int i = fraction; i < 9; i++) {
                        nanos *= 10;
                    }
                }
            } else if (ok) {
                ok = n == 20;
            }
            if (ok) {
                long days = daysFromCivil(year, month, day);
                return Instant.ofEpochSecond(days * 86_400 + hour * 3600L + minute * 60L + second, nanos);
            }
        }
        try {
            return Instant.parse(s);
        } catch (DateTimeParseException e) {
            return null;
        }
    }

    private static int digits(String s, int from, int to) {
        int v = 0;
        for (int i = from; i < to; i++) {
            char c = s.charAt(i);
            if (c < '0' || c > '9') {
                return -1;
            }
            v = v * 10 + (c - '0');
        }
        return v;
    }

    private static int daysIn(int year, int month) {
        return switch (month) {
            case 2 -> (year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)) ? 29 : 28;
            case 4, 6, 9, 11 -> 30;
            default -> 31;
        };
    }

    /** Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil). */
    private static long daysFromCivil(int y, int m, int d) {
        y -= m <= 2 ? 1 : 0;
        long era = (y >= 0 ? y : y - 399) / 400;
        long yoe = y - era * 400;
        long doy = (153L * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
        long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        return era * 146_097 + doe - 719_468;
    }
}
