package dev.ncclguard.bridge.natives;

import dev.ncclguard.bootstrap.state.NativeSink;
import java.util.ArrayList;
import java.util.List;

/**
 * A {@link NativeSink} that records what the generated hook calls hand over, and answers a fixed
 * token. A carried-record call (find, token, exit with the record) is recorded as one entry and
 * one exit whose slots 0 and 1 hold the handle and the stream, {@code carried} set.
 */
final class RecordingSink implements NativeSink {
    /** One hook call: the site, the five slots, and for exits the result, receiver and token. */
    record Call(int site, long[] words, Object[] refs, long result, Object receiver, long token, boolean carried) {
        long word(int k) {
            return words[k];
        }

        Object ref(int k) {
            return refs[k];
        }
    }

    static final long TOKEN = 42;
    /** What {@link #find} answers; a carried exit that got another record fails the test. */
    static final Object FOUND = new Object();

    final List<Call> entered = new ArrayList<>();
    final List<Call> exited = new ArrayList<>();

    @Override
    public long enter(int site, long w0, Object r0, long w1, Object r1, long w2, Object r2, long w3, Object r3,
            long w4, Object r4) {
        entered.add(new Call(site, new long[] {w0, w1, w2, w3, w4}, new Object[] {r0, r1, r2, r3, r4}, 0, null, 0,
                false));
        return TOKEN;
    }

    @Override
    public void exit(int site, long w0, Object r0, long w1, Object r1, long w2, Object r2, long w3, Object r3,
            long w4, Object r4, long result, Object receiver, long token) {
        exited.add(new Call(site, new long[] {w0, w1, w2, w3, w4}, new Object[] {r0, r1, r2, r3, r4}, result,
                receiver, token, false));
    }

    @Override
    public Object find(int site, long handle, Object handleRef, long stream, Object streamRef) {
        entered.add(new Call(site, new long[] {handle, stream, 0, 0, 0}, new Object[] {handleRef, streamRef, null, null,
            null}, 0, null, 0, true));
        return FOUND;
    }

    @Override
    public long token(int site, Object found) {
        if (found != FOUND) {
            throw new AssertionError("token asked for " + found + ", not what find answered");
        }
        return TOKEN;
    }

    @Override
    public void exit(int site, Object found, long handle, Object handleRef, long stream, Object streamRef, long result,
            Object receiver, long token) {
        if (found != FOUND) {
            throw new AssertionError("exit got " + found + ", not what find answered");
        }
        exited.add(new Call(site, new long[] {handle, stream, 0, 0, 0}, new Object[] {handleRef, streamRef, null, null,
            null}, result, receiver, token, true));
    }
}
