package dev.ncclguard.track;

/**
 * One communicator's life as the tracker saw it: created, and released or still alive. The
 * report's {@code communicators} list is made of these, so that reports of several ranks show
 * which rank released a communicator and which did not.
 *
 * @param rank             the rank in the communicator, -1 when unknown (split children)
 * @param nranks           the communicator's size, -1 when unknown
 * @param commId           16 hex digits, the same on every rank; null when unknown
 * @param parentCommId     of a split or shrink child; null otherwise
 * @param releaseStartedAtMillis when the application's destroy or abort of it was called (the
 *                         release that ended it, or one still in flight); 0 when none was seen
 * @param releasedAtMillis when the application destroyed or aborted it; 0 while alive
 * @param releasedBy       ncclCommDestroy or ncclCommAbort; null while alive
 */
public record CommLife(
        long handle,
        String api,
        String thread,
        int device,
        int rank,
        int nranks,
        String commId,
        String parentCommId,
        long createdAtMillis,
        long releaseStartedAtMillis,
        long releasedAtMillis,
        String releasedBy) {

    /** Without the time its release was called (reports of agents that did not record it). */
    public CommLife(long handle, String api, String thread, int device, int rank, int nranks, String commId,
            String parentCommId, long createdAtMillis, long releasedAtMillis, String releasedBy) {
        this(handle, api, thread, device, rank, nranks, commId, parentCommId, createdAtMillis, 0, releasedAtMillis,
                releasedBy);
    }

    public boolean released() {
        return releasedBy != null;
    }

    public String hexHandle() {
        return "0x" + Long.toHexString(handle);
    }

    static CommLife of(CommRecord c, long releasedAtMillis, String releasedBy) {
        return new CommLife(c.handle, c.api, c.thread, c.device, c.rank, c.nranks,
                c.hasCommId ? CommIds.hex(c.commId) : null, c.hasParent ? CommIds.hex(c.parentCommId) : null,
                c.createdAtMillis, c.releaseStartedAtMillis(), releasedAtMillis, releasedBy);
    }
}
