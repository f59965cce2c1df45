package dev.ncclguard.report;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * Lets a report write that runs on its own thread be given up from another: once {@link #abandon}
 * wins, no temporary file of that write is ever renamed or linked into place, and the one being
 * written is removed, so a report past its deadline is absent rather than half there. A rename
 * already begun is waited for (it is one system call), so a report is in place whole or not at all.
 */
public final class WriteGate {
    /** For writes nobody abandons, shared by any number at once: it keeps no state. */
    public static final WriteGate OPEN = new WriteGate(false);

    private static final int WRITING = 0;
    private static final int COMMITTING = 1;
    private static final int ABANDONED = 2;
    /** How long {@link #abandon} waits for a rename in progress; it is one system call. */
    private static final long COMMIT_WAIT_NANOS = TimeUnit.MILLISECONDS.toNanos(200);

    private final AtomicInteger state = new AtomicInteger(WRITING);
    /** False for {@link #OPEN}: then nothing is recorded and nothing can abandon. */
    private final boolean abandonable;
    /** The temporary file being written, removed by an abandon. */
    private volatile Path temp;

    /** A gate for one write (its files one after the other) that another thread may abandon. */
    public WriteGate() {
        this(true);
    }

    private WriteGate(boolean abandonable) {
        this.abandonable = abandonable;
    }

    /** The temporary file a write makes now. */
    void writing(Path file) {
        if (abandonable) {
            temp = file;
        }
    }

    /** Before the rename or link that puts a finished file in place: false once abandoned. */
    boolean beginCommit() {
        return !abandonable || state.compareAndSet(WRITING, COMMITTING);
    }

    /** After that rename or link (or its failure): the next file may be written. */
    void endCommit() {
        if (abandonable) {
            temp = null;
            state.compareAndSet(COMMITTING, WRITING);
        }
    }

    public boolean abandoned() {
        return abandonable && state.get() == ABANDONED;
    }

    /**
     * Gives the write up: no later commit goes through, and the temporary file being written is
     * removed. Waits for a commit in progress first (up to 200 ms); returns false only when that
     * commit has still not ended, which leaves the file it renames to finish or not.
     */
    public boolean abandon() {
        if (!abandonable) {
            throw new IllegalStateException("WriteGate.OPEN cannot be abandoned");
        }
        long until = System.nanoTime() + COMMIT_WAIT_NANOS;
        while (!state.compareAndSet(WRITING, ABANDONED)) {
            if (state.get() == ABANDONED) {
                break;
            }
            if (until - System.nanoTime() <= 0) {
                return false;
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
        }
        Path file = temp;
        if (file != null) {
            try {
                Files.deleteIfExists(file);
            } catch (IOException | RuntimeException e) {
                // the next write to the same place removes it (ReportFiles.removeLeftovers)
            }
        }
        return true;
    }

    /**
     * {@code out}, stopped at its next write once abandoned: an abandoned writer stops making its
     * report (tens of MB) and leaves the CPU to the exit. {@link #OPEN}'s is {@code out} itself.
     */
    OutputStream guard(OutputStream out) {
        return abandonable ? new Guarded(out, this) : out;
    }

    private static final class Guarded extends OutputStream {
        private final OutputStream out;
        private final WriteGate gate;

        Guarded(OutputStream out, WriteGate gate) {
            this.out = out;
            this.gate = gate;
        }

        @Override
        public void write(int b) throws IOException {
            check();
            out.write(b);
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            check();
            out.write(b, off, len);
        }

        @Override
        public void flush() throws IOException {
            out.flush();
        }

        private void check() throws AbandonedException {
            if (gate.abandoned()) {
                throw new AbandonedException();
            }
        }
    }

    /** Thrown inside the abandoned write, so that it stops and logs nothing of its own. */
    static final class AbandonedException extends IOException {
        AbandonedException() {
            super("the write was abandoned at its deadline");
        }
    }
}
