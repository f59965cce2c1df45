package dev.ncclguard.cli;

import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.concurrent.ThreadLocalRandom;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Every file the CLI writes (--html, --json, --trace, --junit-xml): whole or not at all. A regular
 * file, a path that does not exist yet, and a symbolic link are replaced by renaming a temporary
 * file of the same directory over them, so a reader (a CI step, a browser) never sees half a page,
 * and a link is replaced, never written through into whatever it points at. A character device or
 * a FIFO (/dev/stdout, a pipe to another tool) is opened and written through: replacing it would
 * turn it into a plain file. A temporary file left by a process that died while writing (killed
 * mid-way) is removed at the next write to the same place.
 */
final class OutputFile {
    /** .NAME.PID.RANDOM.tmp, as the agent names its own. */
    private static final Pattern TEMP = Pattern.compile("\\.(.+)\\.(\\d{1,10})\\.[0-9a-f]{1,16}\\.tmp");

    /** What goes into the file, written as it is made. */
    @FunctionalInterface
    interface Content {
        void writeTo(OutputStream out) throws IOException;
    }

    private OutputFile() {
    }

    /**
     * Writes {@code content} to {@code target}.
     *
     * @param option the option that named it (--html), for the one line of a failure
     * @throws CommandException one line naming the path, the option and why
     */
    static void write(Path target, String option, Content content) throws CommandException {
        BasicFileAttributes a = null;
        try {
            a = Files.readAttributes(target, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
        } catch (NoSuchFileException e) {
            // a new file
        } catch (IOException e) {
            throw failure(target, option, Inputs.reason(e));
        }
        if (a != null && a.isDirectory()) {
            throw failure(target, option, "it is a directory");
        }
        if (a != null && a.isOther()) {
            String kind = Inputs.kind(target);
            if (!kind.equals("a FIFO") && !kind.equals("a character device")) {
                throw failure(target, option, "it is " + kind + " (only regular files, FIFOs and character devices"
                        + " are written)");
            }
            writeThrough(target, option, content);
            return;
        }
        replace(target, option, content);
    }

    private static void writeThrough(Path target, String option, Content content) throws CommandException {
        try (OutputStream out = new BufferedOutputStream(Files.newOutputStream(target, StandardOpenOption.WRITE),
                1 << 16)) {
            content.writeTo(out);
        } catch (IOException e) {
            throw failure(target, option, Inputs.reason(e));
        }
    }

    private static void replace(Path target, String option, Content content) throws CommandException {
        Path file = target.toAbsolutePath().normalize();
        Path dir = file.getParent();
        if (dir == null || file.getFileName() == null) {
            throw failure(target, option, "it is not a file path");
        }
        try {
            Files.createDirectories(dir);
        } catch (IOException e) {
            throw failure(target, option, "cannot create directory " + dir + ": " + Inputs.reason(e));
        }
        String name = file.getFileName().toString();
        removeLeftovers(dir, name);
        Path temp = dir.resolve("." + name + "." + ProcessHandle.current().pid() + "."
                + Long.toHexString(ThreadLocalRandom.current().nextLong()) + ".tmp");
        boolean moved = false;
        try {
            try (FileChannel channel = FileChannel.open(temp, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
                OutputStream out = new BufferedOutputStream(Channels.newOutputStream(channel), 1 << 16);
                content.writeTo(out);
                out.flush();
                channel.force(true);
            }
            try {
                Files.move(temp, file, StandardCopyOption.ATOMIC_MOVE);
            } catch (AtomicMoveNotSupportedException e) {
                Files.move(temp, file, StandardCopyOption.REPLACE_EXISTING);
            }
            moved = true;
        } catch (IOException e) {
            throw failure(target, option, Inputs.reason(e));
        } finally {
            if (!moved) {
                try {
                    Files.deleteIfExists(temp);
                } catch (IOException e) {
                    // the failure being reported matters more than the leftover
                }
            }
        }
    }

    /** Temporary files for this name whose writer is gone: a process killed while it wrote. */
    static void removeLeftovers(Path dir, String name) {
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(dir, "." + globSafe(name) + ".*.tmp")) {
            for (Path p : entries) {
                Matcher m = TEMP.matcher(p.getFileName().toString());
                if (m.matches() && m.group(1).equals(name) && ProcessHandle.of(Long.parseLong(m.group(2)))
                        .map(h -> !h.isAlive()).orElse(true)) {
                    Files.deleteIfExists(p);
                }
            }
        } catch (IOException | RuntimeException e) {
            // best effort: a leftover is untidy, not wrong
        }
    }

    private static String globSafe(String name) {
        StringBuilder out = new StringBuilder(name.length());
        for (char c : name.toCharArray()) {
            if ("*?[]{}\\".indexOf(c) >= 0) {
                out.append('\\');
            }
            out.append(c);
        }
        return out.toString();
    }

    private static CommandException failure(Path target, String option, String why) {
        return new CommandException("cannot write " + option + " " + target + ": " + why);
    }
}
