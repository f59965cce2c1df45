package dev.ncclguard.bridge;

import dev.ncclguard.track.CallArgs;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * {@link CallArgs} over the argument array of a JNA call, and what else the bridge keeps per
 * thread. One instance per thread is reused, so decoding a tracked call allocates nothing, and a
 * call costs one thread-local lookup.
 */
public final class ArrayArgs implements CallArgs {
    /** A subclass, not withInitial(ArrayArgs::new): a method reference spins classes at a program's first NCCL call. */
    private static final ThreadLocal<ArrayArgs> PER_THREAD = new ThreadLocal<>() {
        @Override
        protected ArrayArgs initialValue() {
            return new ArrayArgs();
        }
    };

    /** The agent's own calls into the libraries in progress, on any thread. */
    private static final AtomicInteger AGENT_CALLS = new AtomicInteger();

    /** Set while the agent itself calls into the library on this thread: the tracker ignores those calls. */
    public boolean agentCall;
    private Object[] args;
    // The reader of the last argument class seen on this thread: the handles of a call, and of the
    // next ones, are nearly always of one class (Pointer), and a ClassValue lookup costs more than
    // the rest of decoding. Kept between calls, so it holds that one JNA class's loader alive as long
    // as the thread lives, like the records of live handles hold their library's.
    private Class<?> lastType;
    private BindingValues.Reader lastReader;

    public static ArrayArgs current() {
        return PER_THREAD.get();
    }

    /**
     * Whether this thread is inside one of the agent's own calls. Those are rare (the exit-time
     * probe and cleanup), so the application's calls skip the thread-local while none is.
     */
    public static boolean agentCallOnThisThread() {
        return AGENT_CALLS.get() != 0 && PER_THREAD.get().agentCall;
    }

    /** Marks the start of an agent's own call on this thread; returns whether it is the outermost. */
    public static boolean agentCallStarts() {
        ArrayArgs thread = PER_THREAD.get();
        if (thread.agentCall) {
            return false;
        }
        AGENT_CALLS.incrementAndGet();
        thread.agentCall = true;
        return true;
    }

    /** Ends what {@link #agentCallStarts} started, when that returned true. */
    public static void agentCallEnds() {
        PER_THREAD.get().agentCall = false;
        AGENT_CALLS.decrementAndGet();
    }

    /** This thread's instance over {@code args}. */
    public static ArrayArgs of(Object[] args) {
        return current().with(args);
    }

    public ArrayArgs with(Object[] args) {
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
