package dev.ncclguard.bridge;

import dev.ncclguard.bootstrap.NativeSink;
import java.util.ArrayList;
import java.util.List;

/** A {@link NativeSink} that records what the generated hook calls hand over, and answers a fixed token. */
final class RecordingSink implements NativeSink {
    /** One hook call: the site, the five slots, and for exits the result, receiver and token. */
    record Call(int site, long[] words, Object[] refs, long result, Object receiver, long token) {
        long word(int k) {
            return words[k];
        }

        Object ref(int k) {
            return refs[k];
        }
    }

    static final long TOKEN = 42;

    final List<Call> entered = new ArrayList<>();
    final List<Call> exited = new ArrayList<>();

    @Override
    public long enter(int site, long w0, Object r0, long w1, Object r1, long w2, Object r2, long w3, Object r3,
            long w4, Object r4) {
        entered.add(new Call(site, new long[] {w0, w1, w2, w3, w4}, new Object[] {r0, r1, r2, r3, r4}, 0, null, 0));
        return TOKEN;
    }

    @Override
    public void exit(int site, long w0, Object r0, long w1, Object r1, long w2, Object r2, long w3, Object r3,
            long w4, Object r4, long result, Object receiver, long token) {
        exited.add(new Call(site, new long[] {w0, w1, w2, w3, w4}, new Object[] {r0, r1, r2, r3, r4}, result,
                receiver, token));
    }
}
