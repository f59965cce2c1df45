package dev.ncclguard.bridge;

/**
 * {@link CallArgs} over the boxed arguments a native-method wrapper hands over, and its result.
 * Positions are those of the site's function: Java argument indexes, or {@link NativeSite#RESULT}.
 * One instance per thread is reused. Values are read like JNA's (numbers, arrays, buffers, JNA
 * pointers and references) and JavaCPP's (Pointer objects and their subclasses).
 */
final class NativeArgs implements CallArgs {
    private static final ThreadLocal<NativeArgs> PER_THREAD = ThreadLocal.withInitial(NativeArgs::new);

    private Object[] args;
    private int count;
    private long result;

    static NativeArgs of(NativeSite site, Object[] args, long result) {
        NativeArgs a = PER_THREAD.get();
        a.args = args;
        a.count = site.paramCount;
        a.result = result;
        return a;
    }

    void clear() {
        args = null;
    }

    private Object at(int index) {
        Object[] a = args;
        return a == null || index < 0 || index >= count || index >= a.length ? null : a[index];
    }

    /** The reference a method returned: the wrapper puts it after the arguments. */
    private Object returned() {
        Object[] a = args;
        return a == null || count >= a.length ? null : a[count];
    }

    @Override
    public long handle(int index) {
        if (index == NativeSite.RESULT) {
            Object r = returned();
            return r != null ? JnaValues.handle(r) : result;
        }
        return JnaValues.handle(at(index));
    }

    @Override
    public long handleOut(int index) {
        return handleOut(index, 0);
    }

    @Override
    public long handleOut(int index, int i) {
        if (index == NativeSite.RESULT) {
            Object r = returned();
            return r != null ? JnaValues.handleOut(r, i) : i == 0 ? result : 0L;
        }
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
