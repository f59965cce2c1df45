package dev.ncclguard.bridge;

import dev.ncclguard.track.CallArgs;

/**
 * {@link CallArgs} over the argument array of a call as JNA or FFM hands it over: JNA's, JavaCPP's,
 * NIO's and FFM's values alike ({@link BindingValues}). One instance per thread is reused, so
 * decoding a tracked call allocates nothing, and a call costs one thread-local lookup.
 */
public final class ArrayArgs implements CallArgs {
    /** A subclass, not withInitial(ArrayArgs::new): a method reference spins classes at a program's first NCCL call. */
    private static final ThreadLocal<ArrayArgs> PER_THREAD = new ThreadLocal<>() {
        @Override
        protected ArrayArgs initialValue() {
            return new ArrayArgs();
        }
    };

    private Object[] args;
    // The reader of the last argument class seen on this thread: the handles of a call, and of the
    // next ones, are nearly always of one class (Pointer), and a ClassValue lookup costs more than
    // the rest of decoding. Kept between calls, so it holds that one JNA class's loader alive as long
    // as the thread lives, like the records of live handles hold their library's.
    private Class<?> lastType;
    private BindingValues.Reader lastReader;

    /** This thread's instance over {@code args}. */
    public static ArrayArgs of(Object[] args) {
        return PER_THREAD.get().with(args);
    }

    private ArrayArgs with(Object[] args) {
        this.args = args;
        return this;
    }

    public void clear() {
        args = null;
    }

    private Object at(int index) {
        Object[] a = args;
        return a == null || index < 0 || index >= a.length ? null : a[index];
    }

    private BindingValues.Reader reader(Object arg) {
        Class<?> type = arg.getClass();
        if (type != lastType) {
            lastReader = BindingValues.readerOf(type);
            lastType = type;
        }
        return lastReader;
    }

    @Override
    public long handle(int index) {
        Object arg = at(index);
        return arg == null ? 0L : BindingValues.handle(reader(arg), arg);
    }

    @Override
    public long handleOut(int index) {
        return handleOut(index, 0);
    }

    @Override
    public long handleOut(int index, int i) {
        Object arg = at(index);
        return arg == null ? 0L : BindingValues.handleOut(reader(arg), arg, i);
    }

    @Override
    public int intArg(int index) {
        return intArray(index, 0, 0);
    }

    @Override
    public int intArray(int index, int i, int fallback) {
        Object arg = at(index);
        return arg == null ? fallback : BindingValues.intAt(reader(arg), arg, i, fallback);
    }

    @Override
    public byte[] bytes(int index, int length) {
        Object arg = at(index);
        return arg == null ? null : BindingValues.bytes(reader(arg), arg, length);
    }
}
