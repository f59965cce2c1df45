package dev.ncclguard.bridge.natives;

import dev.ncclguard.bridge.BindingValues;
import dev.ncclguard.track.CallArgs;

/**
 * {@link CallArgs} over the argument slots a native-method wrapper hands over (see
 * {@link dev.ncclguard.bootstrap.state.NativeSink}), and its result. Positions are those of the site's
 * function: Java argument indexes, or {@link NativeSite#RESULT}; the site says which slot holds
 * which. One instance per thread is reused. References are read like JNA's (arrays, buffers, JNA
 * pointers and references) and JavaCPP's (Pointer objects and their subclasses).
 */
final class NativeArgs implements CallArgs {
    private static final ThreadLocal<NativeArgs> PER_THREAD = ThreadLocal.withInitial(NativeArgs::new);

    private NativeSite site;
    private long w0;
    private long w1;
    private long w2;
    private long w3;
    private long w4;
    private Object r0;
    private Object r1;
    private Object r2;
    private Object r3;
    private Object r4;
    /** Whether r0..r4 were set for this call, so must be dropped after it. */
    private boolean holdsReferences;
    private long result;

    // Reference fields are written only when they change or the site passes references: each such
    // store costs a GC write barrier, more than the rest of handing a hot call over.
    static NativeArgs of(NativeSite site, long w0, Object r0, long w1, Object r1, long w2, Object r2,
            long w3, Object r3, long w4, Object r4, long result) {
        NativeArgs a = PER_THREAD.get();
        if (a.site != site) {
            a.site = site; // kept after the call: sites live as long as the bridge
        }
        a.w0 = w0;
        a.w1 = w1;
        a.w2 = w2;
        a.w3 = w3;
        a.w4 = w4;
        a.result = result;
        if (site.passesReferences) {
            a.r0 = r0;
            a.r1 = r1;
            a.r2 = r2;
            a.r3 = r3;
            a.r4 = r4;
            a.holdsReferences = true;
        }
        return a;
    }

    /** Drops the references, which must not outlive the call. */
    void clear() {
        if (holdsReferences) {
            r0 = null;
            r1 = null;
            r2 = null;
            r3 = null;
            r4 = null;
            holdsReferences = false;
        }
    }

    private int slot(int index) {
        return site.slotOf(index);
    }

    private long word(int k) {
        switch (k) {
            case 0: return w0;
            case 1: return w1;
            case 2: return w2;
            case 3: return w3;
            default: return w4;
        }
    }

    private Object reference(int k) {
        switch (k) {
            case 0: return r0;
            case 1: return r1;
            case 2: return r2;
            case 3: return r3;
            default: return r4;
        }
    }

    @Override
    public long handle(int index) {
        if (index == NativeSite.RESULT) {
            return result;
        }
        int k = slot(index);
        if (k < 0) {
            return 0L;
        }
        if (site.slotIsWord[k]) {
            return word(k);
        }
        Object r = reference(k);
        return r == null ? 0L : BindingValues.handle(site.reader(k, r), r);
    }

    @Override
    public long handleOut(int index) {
        return handleOut(index, 0);
    }

    @Override
    public long handleOut(int index, int i) {
        if (index == NativeSite.RESULT) {
            return i == 0 ? result : 0L;
        }
        int k = slot(index);
        if (k < 0) {
            return 0L;
        }
        if (site.slotIsWord[k]) {
            return i == 0 ? word(k) : 0L;
        }
        Object r = reference(k);
        return r == null ? 0L : BindingValues.handleOut(site.reader(k, r), r, i);
    }

    @Override
    public int intArg(int index) {
        return intArray(index, 0, 0);
    }

    @Override
    public int intArray(int index, int i, int fallback) {
        int k = slot(index);
        if (k < 0) {
            return fallback;
        }
        if (site.slotIsWord[k]) {
            return i == 0 ? (int) word(k) : fallback;
        }
        Object r = reference(k);
        return r == null ? fallback : BindingValues.intAt(site.reader(k, r), r, i, fallback);
    }

    @Override
    public byte[] bytes(int index, int length) {
        int k = slot(index);
        if (k < 0 || site.slotIsWord[k]) {
            return null;
        }
        Object r = reference(k);
        return r == null ? null : BindingValues.bytes(site.reader(k, r), r, length);
    }
}
