package dev.ncclguard.cli;

/**
 * NCCL's lines picked out of a log that holds anything else too (the application's output, a
 * launcher's prefixes such as {@code [1,0]<stdout>:} or timestamps). NCCL prints
 * {@code host:pid:tid [device] [file.cc:line] NCCL WARN message} with NCCL_DEBUG=WARN or INFO,
 * and {@code NCCL version 2.28.3+cuda13.0} once per process.
 *
 * <p>No regular expression reads a whole line: the keyword is found with a substring search and the
 * optional prefix is read backwards from it, each part bounded, so a line costs time in proportion
 * to its length whatever it holds (a pattern with an optional prefix retried at every position of
 * a long line is quadratic). {@link #scan} decides on the raw bytes, before any decoding, whether a
 * line can matter at all.
 */
final class NcclLog {
    /** Longest host name, source location or number read backwards from the keyword. */
    private static final int MAX_PART = 256;
    /** A message is classified on its first characters; NCCL's own are a line. */
    static final int MAX_MESSAGE = 4096;

    /** One NCCL line; host and pid are null when the line carries no prefix. */
    record Line(long number, String text, String host, Long pid, Integer device, String level, String message) {
        String process() {
            return pid == null ? "an unknown process" : "pid " + pid + (host != null ? " on " + host : "");
        }
    }

    /** What {@link #scan} found in a line's bytes. */
    enum Kind {
        /** Nothing of NCCL: skipped undecoded. */
        NONE,
        /** An NCCL INFO or TRACE line without a version: skipped undecoded. */
        NOTE,
        /** A line to decode and read: a warning, a version, or the loader's words for a missing symbol. */
        READ
    }

    private NcclLog() {
    }

    /**
     * Whether the line {@code b[from, to)} needs reading: a few keyword searches (shared by the
     * lines of a chunk, see {@link ExplainCommand.Keywords}), nothing decoded.
     */
    static Kind scan(byte[] b, int from, int to, ExplainCommand.Keywords keywords) {
        for (int k = keywords.find(ExplainCommand.Keywords.NCCL, from, to); k >= 0;
                k = keywords.find(ExplainCommand.Keywords.NCCL, k + 1, to)) {
            int level = level(b, k + 5, to);
            if (level == 0) {
                continue;
            }
            if (level == 'W' || level == 'A') {
                return Kind.READ;
            }
            return keywords.find(ExplainCommand.Keywords.VERSION, k + 5, to) >= 0 ? Kind.READ : Kind.NOTE;
        }
        if (keywords.find(ExplainCommand.Keywords.VERSION, from, to) >= 0
                || keywords.find(ExplainCommand.Keywords.SYMBOL, from, to) >= 0
                || keywords.find(ExplainCommand.Keywords.LOOKUP, from, to) >= 0) {
            return Kind.READ;
        }
        return Kind.NONE;
    }

    private static final String[] LEVELS = {"WARN", "INFO", "ABORT", "TRACE"};

    /** 'W', 'I', 'A', 'T' for WARN, INFO, ABORT, TRACE at {@code at}, followed by a word boundary; else 0. */
    private static int level(byte[] b, int at, int to) {
        for (String word : LEVELS) {
            int end = at + word.length();
            if (end > to) {
                continue;
            }
            boolean same = true;
            for (int i = 0; i < word.length() && same; i++) {
                same = b[at + i] == word.charAt(i);
            }
            if (same && (end == to || !isWord(b[end]))) {
                return word.charAt(0);
            }
        }
        return 0;
    }

    private static boolean isWord(int c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    }

    /** The NCCL line in {@code raw}, or null when it holds none. */
    static Line parse(long number, String raw) {
        for (int k = raw.indexOf("NCCL "); k >= 0; k = raw.indexOf("NCCL ", k + 1)) {
            String level = level(raw, k + 5);
            if (level == null) {
                continue;
            }
            int msg = k + 5 + level.length();
            if (msg < raw.length() && raw.charAt(msg) == ' ') {
                msg++;
            }
            int end = raw.indexOf('\r', msg);
            String message = raw.substring(msg, end < 0 ? Math.min(raw.length(), msg + MAX_MESSAGE)
                    : Math.min(end, msg + MAX_MESSAGE)).strip();
            Prefix p = prefix(raw, k);
            return new Line(number, raw, p == null ? null : p.host, p == null ? null : p.pid,
                    p == null ? null : p.device, level, message);
        }
        return null;
    }

    private static String level(String raw, int at) {
        for (String word : LEVELS) {
            int end = at + word.length();
            if (raw.startsWith(word, at) && (end == raw.length() || !isWord(raw.charAt(end)))) {
                return word;
            }
        }
        return null;
    }

    private record Prefix(String host, Long pid, Integer device) {
    }

    /**
     * {@code host:pid:tid [dev] } (and an optional {@code file.cc:line }) right before the keyword at
     * {@code k}, read backwards; null when it is not there.
     */
    private static Prefix prefix(String s, int k) {
        int j = k;
        // optional source location: [\w./-]+\.(cc|c|cu|h|cpp):\d+ then one space
        if (j >= 2 && s.charAt(j - 1) == ' ') {
            int end = j - 1;
            int a = end;
            while (a > 0 && end - a < MAX_PART && isSourceChar(s.charAt(a - 1))) {
                a--;
            }
            if (isSource(s, a, end)) {
                j = a;
            }
        }
        // "] " ends "[dev] "
        if (j < 2 || s.charAt(j - 1) != ' ' || s.charAt(j - 2) != ']') {
            return null;
        }
        int close = j - 2;
        int d = close;
        while (d > 0 && close - d < 12 && isDigit(s.charAt(d - 1))) {
            d--;
        }
        if (d > 0 && s.charAt(d - 1) == '-') {
            d--;
        }
        if (d == close || d < 2 || s.charAt(d - 1) != '[' || s.charAt(d - 2) != ' ') {
            return null;
        }
        Integer device = parseInt(s, d, close);
        int tidEnd = d - 2;
        int t = digitsBack(s, tidEnd);
        if (t == tidEnd || t < 1 || s.charAt(t - 1) != ':') {
            return null;
        }
        int pidEnd = t - 1;
        int p = digitsBack(s, pidEnd);
        if (p == pidEnd || p < 1 || s.charAt(p - 1) != ':') {
            return null;
        }
        int hostEnd = p - 1;
        int h = hostEnd;
        while (h > 0 && hostEnd - h < MAX_PART && isHostChar(s.charAt(h - 1))) {
            h--;
        }
        if (h == hostEnd || (h > 0 && hostEnd - h == MAX_PART && isHostChar(s.charAt(h - 1)))) {
            return null;
        }
        Long pid;
        try {
            pid = Long.valueOf(s.substring(p, pidEnd));
        } catch (NumberFormatException e) {
            return null;
        }
        return new Prefix(s.substring(h, hostEnd), pid, device);
    }

    private static int digitsBack(String s, int end) {
        int i = end;
        while (i > 0 && end - i < 19 && isDigit(s.charAt(i - 1))) {
            i--;
        }
        return i;
    }

    private static Integer parseInt(String s, int from, int to) {
        try {
            return Integer.valueOf(s.substring(from, to));
        } catch (NumberFormatException e) {
            return null;
        }
    }

    private static boolean isDigit(char c) {
        return c >= '0' && c <= '9';
    }

    private static boolean isHostChar(char c) {
        return !Character.isWhitespace(c) && c != ':' && c != '[' && c != ']' && c != '<' && c != '>';
    }

    private static boolean isSourceChar(char c) {
        return isWord(c) || c == '.' || c == '/' || c == '-' || c == ':';
    }

    /** {@code [\w./-]+\.(cc|c|cu|h|cpp):\d+} over s[a, end). */
    private static boolean isSource(String s, int a, int end) {
        int colon = s.lastIndexOf(':', end - 1);
        if (colon < a + 1 || colon == end - 1) {
            return false;
        }
        for (int i = colon + 1; i < end; i++) {
            if (!isDigit(s.charAt(i))) {
                return false;
            }
        }
        for (int i = a; i < colon; i++) {
            if (s.charAt(i) == ':') {
                return false;
            }
        }
        String file = s.substring(a, colon);
        for (String ext : new String[] {".cc", ".c", ".cu", ".h", ".cpp"}) {
            if (file.endsWith(ext) && file.length() > ext.length()) {
                return true;
            }
        }
        return false;
    }

    /** The version of an "NCCL version 2.28.3+cuda13.0" line (after white space or at the start), or null. */
    static String version(String text) {
        int k = text.lastIndexOf("NCCL version ");
        if (k < 0 || (k > 0 && !Character.isWhitespace(text.charAt(k - 1)))) {
            return null;
        }
        int i = k + "NCCL version ".length();
        int start = i;
        for (int part = 0; part < 3; part++) {
            int digits = i;
            while (i < text.length() && isDigit(text.charAt(i))) {
                i++;
            }
            if (i == digits) {
                return null;
            }
            if (part < 2) {
                if (i >= text.length() || text.charAt(i) != '.') {
                    return null;
                }
                i++;
            }
        }
        while (i < text.length() && !Character.isWhitespace(text.charAt(i))) {
            i++;
        }
        int end = i;
        while (i < text.length() && Character.isWhitespace(text.charAt(i))) {
            i++;
        }
        return i == text.length() ? text.substring(start, end) : null;
    }

    /** The loader's and JNA's words for a function the library lacks: a version mismatch, NCCL prefix or not. */
    static boolean missingSymbol(String raw) {
        return raw.contains("undefined symbol") || raw.contains("Error looking up function '")
                || raw.contains("symbol lookup error");
    }
}
