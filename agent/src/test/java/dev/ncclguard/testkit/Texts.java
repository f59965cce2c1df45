package dev.ncclguard.testkit;

/** Counting in what a command printed or a page holds. */
public final class Texts {
    private Texts() {
    }

    /** How often {@code part} occurs in {@code text}, overlapping occurrences included. */
    public static int count(String text, String part) {
        int n = 0;
        for (int i = text.indexOf(part); i >= 0; i = text.indexOf(part, i + 1)) {
            n++;
        }
        return n;
    }
}
