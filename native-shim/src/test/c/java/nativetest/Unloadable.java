package nativetest;

/** MemoTest (d): loaded by a class loader of its own, dropped and unloaded after it made events. */
public final class Unloadable {
    public static long[] call(int n) {
        return MemoTest.createFor(n);
    }

    private Unloadable() {
    }
}
