package dev.ncclguard.bridge;

/**
 * {@link CallArgs} over the argument array of a JNA call. One instance per thread is reused, so
 * decoding a tracked call allocates nothing.
 */
final class JnaArgs implements CallArgs {
    private static final ThreadLocal<JnaArgs> PER_THREAD = ThreadLocal.withInitial(JnaArgs::new);

    private Object[] args;

    static JnaArgs of(Object[] args) {
        JnaArgs a = PER_THREAD.get();
        a.args = args;
        return a;
    }

    void clear() {
        args = null;
    }

    private Object at(int index) {
        Object[] a = args;
        return a == null || index < 0 || index >= a.length ? null : a[index];
    }

    @Override
    public long handle(int index) {
        return JnaValues.handle(at(index));
    }

    @Override
    public long handleOut(int index) {
        return JnaValues.handleOut(at(index), 0);
    }

    @Override
    public long handleOut(int index, int i) {
        return JnaValues.handleOut(at(index), i);
    }

    @Override
    public int intArg(int index) {
        return JnaValues.intAt(at(index), 0, 0);
    }

    @Override
    public int intArray(int index, int i, int fallback) {
        return JnaValues.intAt(at(index), i, fallback);
    }

    @Override
    public byte[] bytes(int index, int length) {
        return JnaValues.bytes(at(index), length);
    }
}
