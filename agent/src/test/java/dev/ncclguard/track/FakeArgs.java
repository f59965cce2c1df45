package dev.ncclguard.track;


/**
 * Arguments of one call as a bridge would decode them, set by position. Reusable (set, call,
 * set again) so that hot-path tests allocate nothing of their own. Out-of-range or unset
 * positions answer 0 or null, as the CallArgs contract says.
 */
final class FakeArgs implements CallArgs {
    static final NativeAccess ACCESS = new NativeAccess() {
        @Override
        public String library() {
            return "fake";
        }

        @Override
        public int call(String symbol, Object... args) {
            return 0;
        }
    };

    private static final int N = 8;
    private final long[] handles = new long[N];
    private final long[] outs = new long[N];
    private final long[][] outArrays = new long[N][];
    private final int[] ints = new int[N];
    private final int[][] intArrays = new int[N][];
    private final byte[][] bytes = new byte[N][];

    static FakeArgs args() {
        return new FakeArgs();
    }

    FakeArgs handle(int i, long v) {
        handles[i] = v;
        return this;
    }

    FakeArgs out(int i, long v) {
        outs[i] = v;
        return this;
    }

    FakeArgs outs(int i, long... v) {
        outArrays[i] = v;
        return this;
    }

    FakeArgs i(int i, int v) {
        ints[i] = v;
        return this;
    }

    FakeArgs ints(int i, int... v) {
        intArrays[i] = v;
        return this;
    }

    FakeArgs bytes(int i, byte[] v) {
        bytes[i] = v;
        return this;
    }

    @Override
    public long handle(int index) {
        return index >= 0 && index < N ? handles[index] : 0;
    }

    @Override
    public long handleOut(int index) {
        return index >= 0 && index < N ? outs[index] : 0;
    }

    @Override
    public long handleOut(int index, int i) {
        if (index < 0 || index >= N || outArrays[index] == null || i < 0 || i >= outArrays[index].length) {
            return 0;
        }
        return outArrays[index][i];
    }

    @Override
    public int intArg(int index) {
        return index >= 0 && index < N ? ints[index] : 0;
    }

    @Override
    public int intArray(int index, int i, int fallback) {
        if (index < 0 || index >= N || intArrays[index] == null || i < 0 || i >= intArrays[index].length) {
            return fallback;
        }
        return intArrays[index][i];
    }

    @Override
    public byte[] bytes(int index, int length) {
        if (index < 0 || index >= N || bytes[index] == null || bytes[index].length < length) {
            return null;
        }
        byte[] copy = new byte[length];
        System.arraycopy(bytes[index], 0, copy, 0, length);
        return copy;
    }
}
