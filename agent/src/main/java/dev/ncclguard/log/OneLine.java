package dev.ncclguard.log;

/**
 * A value shown inside one line of text (the text report, a command's output, the line that
 * rejects an option): control characters escaped, so a thread name, frame or host holding a line
 * break never starts a line of its own (least of all a second SUMMARY line). The one escaper of
 * the agent and its commands.
 */
public final class OneLine {
    private OneLine() {
    }

    /**
     * The text with each control character escaped: line feed, carriage return and tab as
     * {@code \n}, {@code \r}, {@code \t}, the others ({@link #isControl}) as {@code \}{@code uXXXX};
     * "?" for null. The text itself when it holds none.
     */
    public static String of(String text) {
        if (text == null) {
            return "?";
        }
        StringBuilder out = null;
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            boolean control = isControl(c);
            if (control && out == null) {
                out = new StringBuilder(text.length() + 8).append(text, 0, i);
            }
            if (out == null) {
                continue;
            }
            if (!control) {
                out.append(c);
                continue;
            }
            switch (c) {
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                default -> out.append("\\u").append(HEX[c >> 12 & 0xf]).append(HEX[c >> 8 & 0xf])
                        .append(HEX[c >> 4 & 0xf]).append(HEX[c & 0xf]);
            }
        }
        return out == null ? text : out.toString();
    }

    /**
     * C0 and C1 control characters, DEL, and the Unicode line and paragraph separators (which
     * some terminals and editors break lines at).
     */
    public static boolean isControl(char c) {
        return c < 0x20 || (c >= 0x7f && c <= 0x9f) || c == '\u2028' || c == '\u2029';
    }

    private static final char[] HEX = "0123456789abcdef".toCharArray();
}
