package dev.ncclguard.report;

import dev.ncclguard.config.OutputNames;
import dev.ncclguard.log.Log;
import java.io.IOException;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileTime;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;

/**
 * The report files of a process at their expanded names ({@link OutputNames}). A name with %n takes
 * the lowest number whose file does not exist yet: the report is written whole into a temporary
 * file, then hard-linked to each candidate name in turn, which fails on an existing file, so two
 * processes that exit at once with the same name (pid 1 in two containers, the same rank of a job
 * run twice) never take one number. With %n{MAX}, once 0 to MAX-1 are all taken the oldest of
 * them is replaced, so at most MAX files are kept (async-profiler's ring of files).
 */
public final class NumberedFiles {
    private NumberedFiles() {
    }

    /** What every name of this process expands to: pid, host, the agent's start, the environment. */
    public record Names(long pid, String host, String started, Map<String, String> env) {
        public String expand(String template, long number) {
            return OutputNames.expand(template, pid, host, started, env, number);
        }
    }

    /** What {@link #write} returns when the file could not be written (its one line is logged). */
    public static final long FAILED = -2;

    /** Like {@link #write(String, ReportFiles.Content, String, Names, long)} for content made already. */
    public static long write(String template, byte[] content, String optionKey, Names names, long number) {
        return write(template, new Bytes(content), optionKey, names, number, WriteGate.OPEN);
    }

    /** Like {@link #write(String, byte[], String, Names, long)}, for a write {@code gate} may abandon. */
    public static long write(String template, byte[] content, String optionKey, Names names, long number,
                             WriteGate gate) {
        return write(template, new Bytes(content), optionKey, names, number, gate);
    }

    /** A class, not a lambda: no method handles to link at exit. */
    private static final class Bytes implements ReportFiles.Content {
        private final byte[] content;

        Bytes(byte[] content) {
            this.content = content;
        }

        @Override
        public void writeTo(java.io.OutputStream out) throws IOException {
            out.write(content);
        }
    }

    /**
     * Writes {@code content} at {@code template}'s name; a failure is one logged line.
     *
     * @param number what %n is (the text report takes the number its JSON report got), or -1 to
     *               pick the lowest free one
     * @return the number %n took; -1 when the template has no %n; {@link #FAILED} when the file could
     *         not be written
     */
    public static long write(String template, ReportFiles.Content content, String optionKey, Names names, long number) {
        return write(template, content, optionKey, names, number, WriteGate.OPEN);
    }

    /**
     * Like {@link #write(String, ReportFiles.Content, String, Names, long)}, for a write that
     * {@code gate} may abandon from another thread: then nothing is put in place and nothing logged.
     */
    public static long write(String template, ReportFiles.Content content, String optionKey, Names names, long number,
                             WriteGate gate) {
        if (!OutputNames.numbered(template) || number >= 0) {
            boolean written = ReportFiles.write(Path.of(names.expand(template, Math.max(number, 0))), content, optionKey,
                    gate);
            return !written ? FAILED : OutputNames.numbered(template) ? number : -1;
        }
        Path first = Path.of(names.expand(template, 0)).toAbsolutePath().normalize();
        Path dir = first.getParent();
        Path temp = null;
        try {
            if (dir == null || first.getFileName() == null) {
                throw new IOException("it is not a file path");
            }
            Files.createDirectories(dir);
            temp = dir.resolve(new StringBuilder(64).append('.').append(first.getFileName()).append('.')
                    .append(names.pid()).append('.').append(Long.toHexString(ThreadLocalRandom.current().nextLong()))
                    .append(".tmp").toString());
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
            long taken;
            try {
                taken = claim(template, names, temp);
            } finally {
                gate.endCommit();
            }
            syncDirectory(dir);
            return taken;
        } catch (IOException | RuntimeException e) {
            if (gate.abandoned()) {
                return FAILED; // the caller says why, in one line
            }
            Log.warn("cannot write " + ("text".equals(optionKey) ? "text report" : "report") + " to " + first + ": "
                    + (e.getMessage() != null ? e.getMessage() : e.getClass().getSimpleName()) + "; set " + optionKey
                    + "= to a writable path");
            return FAILED;
        } finally {
            if (temp != null) {
                try {
                    Files.deleteIfExists(temp);
                } catch (IOException e) {
                    // the report is in place, or its failure is logged: that matters more
                }
            }
        }
    }

    /** Links the whole temporary file to the first free name; the number taken. */
    private static long claim(String template, Names names, Path temp) throws IOException {
        int max = OutputNames.max(template);
        long limit = max > 0 ? max : OutputNames.MAX_LIMIT;
        for (long n = 0; n < limit; n++) {
            Path candidate = Path.of(names.expand(template, n));
            Path parent = candidate.toAbsolutePath().getParent();
            if (parent != null) {
                Files.createDirectories(parent);
            }
            try {
                Files.createLink(candidate, temp);
                return n;
            } catch (FileAlreadyExistsException e) {
                continue;
            } catch (UnsupportedOperationException | IOException e) {
                // a file system without hard links: the check and the rename are two steps there
                if (!Files.exists(candidate, LinkOption.NOFOLLOW_LINKS)) {
                    Files.move(temp, candidate);
                    return n;
                }
            }
        }
        if (max <= 0) {
            throw new IOException("every number from 0 to " + (limit - 1) + " is taken");
        }
        long oldest = 0;
        FileTime oldestTime = null;
        for (long n = 0; n < max; n++) {
            FileTime t;
            try {
                t = Files.getLastModifiedTime(Path.of(names.expand(template, n)), LinkOption.NOFOLLOW_LINKS);
            } catch (NoSuchFileException e) {
                oldest = n; // removed meanwhile: free now
                break;
            }
            if (oldestTime == null || t.compareTo(oldestTime) < 0) {
                oldest = n;
                oldestTime = t;
            }
        }
        Files.move(temp, Path.of(names.expand(template, oldest)), StandardCopyOption.ATOMIC_MOVE);
        return oldest;
    }

    private static void syncDirectory(Path dir) {
        try (FileChannel channel = FileChannel.open(dir, StandardOpenOption.READ)) {
            channel.force(true);
        } catch (IOException | RuntimeException e) {
            // the report is in place; only its survival of a power cut is less certain
        }
    }
}
