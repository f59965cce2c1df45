package dev.ncclguard.report;

import dev.ncclguard.log.Log;
import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.file.AccessDeniedException;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Writes report files whole or not at all: a temporary file in the target's directory, flushed to
 * disk, then renamed over the target, so a reader (a CI step, a tail) never sees half a report. A
 * symbolic link is replaced by that rename, never written through. A FIFO, a character device or a
 * socket (a pipe to another tool, /dev/stdout, /dev/null) is opened and written through instead:
 * renaming over it would turn it into a plain file. A temporary file left by a process that died
 * while it wrote is removed at the next write to the same place.
 * Missing parent directories are created, as JaCoCo's agent does for its destfile, so that
 * {@code report=build/ncclguard/%p.json} works on a fresh checkout.
 */
public final class ReportFiles {
    private ReportFiles() {
    }

    /** A report file that could not be written; the message is one line naming path, cause and fix. */
    public static final class ReportWriteException extends IOException {
        ReportWriteException(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /** What goes into a report file, written into the temporary file as it is produced. */
    @FunctionalInterface
    public interface Content {
        /** Writes everything to {@code out}; it need not flush or close it. */
        void writeTo(OutputStream out) throws IOException;
    }

    /** Content made already. A class, not a lambda: no method handles to link at exit. */
    private static final class Bytes implements Content {
        private final byte[] content;

        Bytes(byte[] content) {
            this.content = content;
        }

        @Override
        public void writeTo(OutputStream out) throws IOException {
            out.write(content);
        }
    }

    /** Writes the JSON report (option {@code report=}) to {@code target}. */
    public static void writeAtomically(Path target, byte[] content) throws ReportWriteException {
        writeAtomically(target, content, "report");
    }

    /**
     * Writes {@code content} to {@code target} atomically; {@code optionKey} names the option that
     * chose the path, for the fix in the failure message. Leaves no temporary file behind.
     */
    public static void writeAtomically(Path target, byte[] content, String optionKey) throws ReportWriteException {
        writeAtomically(target, new Bytes(content), optionKey);
    }

    /**
     * Like {@link #writeAtomically(Path, byte[], String)} for content that is written as it is made
     * (a big report need not exist as one array first); content that fails half way leaves no file.
     */
    public static void writeAtomically(Path target, Content content, String optionKey) throws ReportWriteException {
        writeAtomically(target, content, optionKey, WriteGate.OPEN);
    }

    /**
     * Like {@link #writeAtomically(Path, Content, String)}, for a write that {@code gate} may
     * abandon from another thread: then the temporary file is never renamed into place.
     */
    static void writeAtomically(Path target, Content content, String optionKey, WriteGate gate)
            throws ReportWriteException {
        BasicFileAttributes attributes = null;
        try {
            attributes = Files.readAttributes(target, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
        } catch (NoSuchFileException e) {
            // a new file
        } catch (IOException | RuntimeException e) {
            // not known now: the write below says why if it fails
        }
        if (attributes != null && attributes.isDirectory()) {
            throw failure(target, "it is a directory", optionKey, null);
        }
        if (attributes != null && attributes.isOther()) {
            // a FIFO, a terminal, /dev/null, /dev/stdout: replacing it would turn it into a plain file
            writeThrough(target, content, optionKey);
            return;
        }
        // a regular file, a new one, or a symbolic link: the rename replaces the link itself
        Path file = target.toAbsolutePath().normalize();
        Path dir = file.getParent();
        if (dir == null || file.getFileName() == null) {
            throw failure(target, "it is not a file path", optionKey, null);
        }
        try {
            Files.createDirectories(dir);
        } catch (FileAlreadyExistsException e) {
            throw failure(target, e.getFile() + " is not a directory", optionKey, e);
        } catch (IOException | RuntimeException e) {
            throw failure(target, "cannot create directory " + dir + ": " + reason(e), optionKey, e);
        }
        removeLeftovers(dir, file.getFileName().toString());
        // a StringBuilder, not +: at exit a concatenation of this shape links method handles (ms)
        Path temp = dir.resolve(new StringBuilder(64).append('.').append(file.getFileName()).append('.')
                .append(ProcessHandle.current().pid()).append('.')
                .append(Long.toHexString(ThreadLocalRandom.current().nextLong())).append(".tmp").toString());
        boolean moved = false;
        try {
            if (gate.abandoned()) {
                throw new WriteGate.AbandonedException();
            }
            gate.writing(temp);
            try (FileChannel channel = FileChannel.open(temp, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
                content.writeTo(gate.guard(Channels.newOutputStream(channel)));
                channel.force(true);
            }
            if (!gate.beginCommit()) {
                throw new WriteGate.AbandonedException();
            }
            try {
                try {
                    Files.move(temp, file, StandardCopyOption.ATOMIC_MOVE);
                } catch (AtomicMoveNotSupportedException e) {
                    Files.move(temp, file, StandardCopyOption.REPLACE_EXISTING);
                }
                moved = true;
            } finally {
                gate.endCommit();
            }
            syncDirectory(dir);
        } catch (IOException | RuntimeException e) {
            throw failure(target, Files.isDirectory(file) ? "it is a directory" : reason(e), optionKey, e);
        } finally {
            if (!moved) {
                try {
                    Files.deleteIfExists(temp);
                } catch (IOException e) {
                    // The failure being reported matters more than the leftover temporary file.
                }
            }
        }
    }

    /** Opens an existing special file for writing and writes into it; no temporary file, no rename. */
    private static void writeThrough(Path target, Content content, String optionKey) throws ReportWriteException {
        try (OutputStream out = Files.newOutputStream(target, StandardOpenOption.WRITE)) {
            OutputStream buffered = new BufferedOutputStream(out, 1 << 16);
            content.writeTo(buffered);
            buffered.flush();
        } catch (IOException | RuntimeException e) {
            throw failure(target, reason(e), optionKey, e);
        }
    }

    /**
     * Removes temporary files {@code .NAME.PID.HEX.tmp} of {@code name} whose process is gone (one
     * killed while it wrote a report), so a SIGKILL mid-write does not leave tens of MB for good.
     * A plain scan, no glob or regular expression: at exit those cost class loading and linking.
     */
    static void removeLeftovers(Path dir, String name) {
        String prefix = "." + name + ".";
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(dir)) {
            for (Path p : entries) {
                String n = p.getFileName().toString();
                if (!n.startsWith(prefix) || !n.endsWith(".tmp")) {
                    continue;
                }
                String middle = n.substring(prefix.length(), n.length() - ".tmp".length());
                int dot = middle.indexOf('.');
                long pid = dot > 0 ? pid(middle, 0, dot) : -1;
                if (pid < 0 || !hexDigits(middle, dot + 1, middle.length()) || pid == ProcessHandle.current().pid()) {
                    continue;
                }
                Optional<ProcessHandle> writer = ProcessHandle.of(pid);
                if (writer.isEmpty() || !writer.get().isAlive()) {
                    Files.deleteIfExists(p);
                }
            }
        } catch (IOException | RuntimeException e) {
            // best effort: a leftover is untidy, not wrong
        }
    }

    /** text[from, to) as a pid (1 to 10 decimal digits); -1 if it is none. */
    private static long pid(String text, int from, int to) {
        if (to <= from || to - from > 10) {
            return -1;
        }
        long n = 0;
        for (int i = from; i < to; i++) {
            int d = Character.digit(text.charAt(i), 10);
            if (d < 0) {
                return -1;
            }
            n = n * 10 + d;
        }
        return n;
    }

    /**
     * Whether text[from, to) is what Long.toHexString writes: 1 to 16 lower-case hex digits. Not
     * parsed into a long: half of them (8 to f first of 16) overflowed to negative and were kept.
     */
    private static boolean hexDigits(String text, int from, int to) {
        if (to <= from || to - from > 16) {
            return false;
        }
        for (int i = from; i < to; i++) {
            char c = text.charAt(i);
            if (!(c >= '0' && c <= '9' || c >= 'a' && c <= 'f')) {
                return false;
            }
        }
        return true;
    }

    /**
     * Writes like {@link #writeAtomically(Path, byte[], String)}, but logs a failure as one line
     * instead of throwing: a report that cannot be written must not disturb the application's exit.
     */
    public static boolean write(Path target, byte[] content, String optionKey) {
        return write(target, new Bytes(content), optionKey);
    }

    /** Like {@link #write(Path, byte[], String)}, the content written as it is made. */
    public static boolean write(Path target, Content content, String optionKey) {
        return write(target, content, optionKey, WriteGate.OPEN);
    }

    /** Like {@link #write(Path, Content, String)}; a write {@code gate} abandoned logs nothing (its caller says why). */
    static boolean write(Path target, Content content, String optionKey, WriteGate gate) {
        try {
            writeAtomically(target, content, optionKey, gate);
            return true;
        } catch (ReportWriteException e) {
            if (!gate.abandoned()) {
                Log.warn(e.getMessage());
            }
            return false;
        }
    }

    /** Makes the rename itself durable; not every platform can open a directory, so best effort. */
    private static void syncDirectory(Path dir) {
        try (FileChannel channel = FileChannel.open(dir, StandardOpenOption.READ)) {
            channel.force(true);
        } catch (IOException | RuntimeException e) {
            // The report is in place; only its survival of a power cut is less certain.
        }
    }

    private static ReportWriteException failure(Path target, String cause, String optionKey, Throwable e) {
        return new ReportWriteException("cannot write " + ("text".equals(optionKey) ? "text report" : "report")
                + " to " + target + ": " + cause + "; set " + optionKey + "= to a writable path", e);
    }

    private static String reason(Throwable e) {
        if (e instanceof AccessDeniedException) {
            return "permission denied";
        }
        if (e instanceof NoSuchFileException) {
            return "directory does not exist";
        }
        if (e instanceof NotDirectoryException) {
            return "not a directory";
        }
        if (e instanceof FileSystemException fs && fs.getReason() != null) {
            String why = fs.getReason();
            return why.isEmpty() ? why : why.substring(0, 1).toLowerCase(Locale.ROOT) + why.substring(1);
        }
        return e.getMessage() != null ? e.getMessage() : e.getClass().getSimpleName();
    }
}
