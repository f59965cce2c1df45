package dev.ncclguard.weave;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Method shapes whose code offsets ClassEdit must move when it puts code at their entry: jumps to
 * the first instruction, switches (padding), handlers, frames with uninitialized objects, long
 * and double constants. Public with public methods: the tests call an edited copy in another loader.
 */
public final class ClassEditFixture {
    static final long BIG = 0x1234_5678_9abc_def0L;
    static final double RATIO = 2.5;

    public ClassEditFixture() {
    }

    /** A loop whose test is the first instruction: a stack map frame at offset 0. */
    public static int loopFirst(int n) {
        while (n > 100) {
            n -= 7;
        }
        return n;
    }

    public static int tableSwitch(int k) {
        switch (k) {
            case 0: return 10;
            case 1: return 11;
            case 2: return 12;
            case 3: return 13;
            default: return -1;
        }
    }

    public static int lookupSwitch(int k) {
        switch (k) {
            case 10: return 1;
            case 1000: return 2;
            case 100000: return 3;
            default: return 0;
        }
    }

    /** The first frame is the handler's: same_locals_1_stack_item. */
    public static int handler(String s) {
        try {
            return Integer.parseInt(s);
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    /** A long straight start, so the first frame's offset needs the extended frame form once moved. */
    public static long longStart(long a) {
        long b = a * 3 + 1;
        long c = b * 5 + 2;
        long d = c * 7 + 3;
        long e = d * 11 + 4;
        long f = e * 13 + 5 + BIG;
        long g = f * 17 + 6;
        double h = g * RATIO;
        if (a > 0) {
            return g + (long) h;
        }
        return -g;
    }

    /** A handler after a long straight try: its frame too takes the extended form. */
    public static int longTry(String s) {
        try {
            int a = s.length() * 3 + 1;
            int b = a * 5 + 2;
            int c = b * 7 + 3;
            int d = c * 11 + 4;
            int e = d * 13 + 5;
            int f = e * 17 + 6;
            int g = f * 19 + 7;
            return Integer.parseInt(s) + g - g;
        } catch (NumberFormatException e) {
            return -2;
        }
    }

    /** An object under construction across a branch: an uninitialized(offset) type in a frame. */
    public static String uninitialized(boolean yes) {
        return new StringBuilder(yes ? "yes" : "no").append('!').toString();
    }

    public static int finallyBlock(int n) {
        int out = 0;
        try {
            if (n < 0) {
                throw new IllegalArgumentException("negative");
            }
            out = n * 2;
        } catch (IllegalArgumentException e) {
            out = -1;
        } finally {
            out += 1000;
        }
        return out;
    }

    public int instance(int x) {
        return x + 1;
    }

    @Retention(RetentionPolicy.CLASS)
    @Target(ElementType.TYPE_USE)
    @interface Marked {
    }

    /** A type annotation on a local: code offsets ClassEdit does not move, so it refuses. */
    public static int annotatedLocal(String s) {
        @Marked String local = s.trim();
        return local.length();
    }
}
