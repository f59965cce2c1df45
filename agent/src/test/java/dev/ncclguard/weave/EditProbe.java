package dev.ncclguard.weave;

/** What code put in by ClassEdit calls in the tests; public, since the edited classes live in another class loader. */
public final class EditProbe {
    public static int hits;
    public static int lastInt;

    private EditProbe() {
    }

    public static void hit() {
        hits++;
    }

    public static void seen(int value) {
        hits++;
        lastInt = value;
    }
}
