package dev.ncclguard.config;

import java.util.Map;

/**
 * The placeholders of the {@code report=} and {@code text=} paths (docs/spec.md, "Output names"):
 * {@code %p} the pid, {@code %h} the host, {@code %t} the agent's start (UTC, {@code 20261129T194004Z}),
 * {@code %{NAME}} the environment variable NAME (nothing when unset), {@code %n} and
 * {@code %n{MAX}} a number that makes the name one no other file has yet (async-profiler's
 * sequence number: {@code %n{MAX}} wraps at MAX, so at most MAX files are kept), {@code %%} a
 * '%'. Anything else after a '%' stays as it is. Checked in premain without regular expressions;
 * expanded at exit, where {@link #expand} is given the number to put for %n.
 */
public final class OutputNames {
    /** The largest MAX of %n{MAX}. */
    public static final int MAX_LIMIT = 1_000_000;

    private OutputNames() {
    }

    /** What is wrong with the template, in a few words; null when it is a valid one. */
    public static String problem(String template) {
        for (int i = 0; i < template.length(); i++) {
            if (template.charAt(i) != '%' || i + 1 >= template.length()) {
                continue;
            }
            char n = template.charAt(i + 1);
            if (n == '{') {
                int close = template.indexOf('}', i + 2);
                if (close < 0) {
                    return "'%{' without its closing '}'";
                }
                if (!variableName(template, i + 2, close)) {
                    return "'" + template.substring(i, close + 1) + "' does not name an environment variable"
                            + " (letters, digits and '_', not starting with a digit)";
                }
                i = close;
            } else if (n == 'n' && i + 2 < template.length() && template.charAt(i + 2) == '{') {
                int close = template.indexOf('}', i + 3);
                long max = close < 0 ? -1 : digits(template, i + 3, close);
                if (max < 1 || max > MAX_LIMIT) {
                    return "'%n{' takes a number of files from 1 to " + MAX_LIMIT + " and a closing '}'";
                }
                i = close;
            } else {
                i++; // %p, %h, %t, %n, %% or a '%' kept as it is
            }
        }
        return null;
    }

    /** Whether the template holds %n or %n{MAX}. */
    public static boolean numbered(String template) {
        return max(template) >= 0;
    }

    /** MAX of the template's first %n{MAX}; 0 for a plain %n; -1 when it has no %n. */
    public static int max(String template) {
        for (int i = 0; i + 1 < template.length(); i++) {
            if (template.charAt(i) != '%') {
                continue;
            }
            char n = template.charAt(i + 1);
            if (n == 'n') {
                int close = i + 2 < template.length() && template.charAt(i + 2) == '{' ? template.indexOf('}', i + 3) : -1;
                return close < 0 ? 0 : (int) digits(template, i + 3, close);
            }
            if (n == '{') {
                int close = template.indexOf('}', i + 2);
                i = close < 0 ? template.length() : close;
            } else {
                i++;
            }
        }
        return -1;
    }

    /**
     * The name for this process.
     *
     * @param started the agent's start, as {@code %t} writes it ({@link #startTime})
     * @param number what %n stands for (each %n{MAX} writes {@code number % MAX})
     */
    public static String expand(String template, long pid, String host, String started, Map<String, String> env,
            long number) {
        StringBuilder out = new StringBuilder(template.length() + 32);
        for (int i = 0; i < template.length(); i++) {
            char c = template.charAt(i);
            if (c != '%' || i + 1 >= template.length()) {
                out.append(c);
                continue;
            }
            char n = template.charAt(i + 1);
            switch (n) {
                case 'p':
                    out.append(pid);
                    i++;
                    break;
                case 'h':
                    out.append(host);
                    i++;
                    break;
                case 't':
                    out.append(started);
                    i++;
                    break;
                case '%':
                    out.append('%');
                    i++;
                    break;
                case 'n': {
                    int close = i + 2 < template.length() && template.charAt(i + 2) == '{'
                            ? template.indexOf('}', i + 3) : -1;
                    long max = close < 0 ? 0 : digits(template, i + 3, close);
                    out.append(max > 0 ? number % max : number);
                    i = close < 0 ? i + 1 : close;
                    break;
                }
                case '{': {
                    int close = template.indexOf('}', i + 2);
                    if (close < 0) {
                        out.append(c);
                        break;
                    }
                    String value = env == null ? null : env.get(template.substring(i + 2, close));
                    if (value != null) {
                        out.append(value);
                    }
                    i = close;
                    break;
                }
                default:
                    out.append(c);
            }
        }
        return out.toString();
    }

    /** {@code %t}: epoch milliseconds as UTC {@code yyyyMMdd'T'HHmmss'Z'}, without java.time's formatters. */
    public static String startTime(long epochMillis) {
        long seconds = Math.floorDiv(epochMillis, 1000L);
        long days = Math.floorDiv(seconds, 86_400L);
        long secondOfDay = seconds - days * 86_400L;
        // civil date from days since 1970-01-01 (H. Hinnant's algorithm)
        long z = days + 719_468L;
        long era = Math.floorDiv(z, 146_097L);
        long doe = z - era * 146_097L;
        long yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        long doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        long mp = (5 * doy + 2) / 153;
        long day = doy - (153 * mp + 2) / 5 + 1;
        long month = mp < 10 ? mp + 3 : mp - 9;
        long year = yoe + era * 400 + (month <= 2 ? 1 : 0);
        StringBuilder out = new StringBuilder(16);
        out.append(year);
        two(out, month);
        two(out, day);
        out.append('T');
        two(out, secondOfDay / 3600);
        two(out, secondOfDay / 60 % 60);
        two(out, secondOfDay % 60);
        return out.append('Z').toString();
    }

    private static void two(StringBuilder out, long value) {
        if (value < 10) {
            out.append('0');
        }
        out.append(value);
    }

    private static boolean variableName(String text, int from, int to) {
        if (to <= from) {
            return false;
        }
        for (int i = from; i < to; i++) {
            char c = text.charAt(i);
            boolean letter = c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c == '_';
            if (!letter && !(i > from && c >= '0' && c <= '9')) {
                return false;
            }
        }
        return true;
    }

    /** The value of text[from, to) if it is 1 to 7 ASCII digits, else -1. */
    private static long digits(String text, int from, int to) {
        if (to <= from || to - from > 7) {
            return -1;
        }
        long n = 0;
        for (int i = from; i < to; i++) {
            char c = text.charAt(i);
            if (c < '0' || c > '9') {
                return -1;
            }
            n = n * 10 + (c - '0');
        }
        return n;
    }
}
