package dev.ncclguard.config;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;

/**
 * The start-time check of the report files (report=, text=): a path that can never be written (a
 * directory, a parent that is a file, a directory without write permission) or one path for two
 * outputs stops the start with one line, like a bad option, instead of a run whose report is lost
 * at exit. Only what is known now is checked: the part of a path before its first %p or %h. The
 * directory the report would be renamed into is proved by creating and removing a file there, as
 * the write at exit does (permission bits say yes to root on /proc); a special file is never opened
 * (a FIFO's reader must not see an open at start).
 */
public final class OutputTargets {
    /** Linux's NAME_MAX: bytes of one file name. */
    static final int NAME_MAX = 255;
    /** Linux's PATH_MAX, less its terminating NUL: bytes of a path a system call takes. */
    static final int PATH_MAX = 4095;

    private OutputTargets() {
    }

    /** @throws OptionsException the one line naming the option, the path and why */
    public static void check(Options options) {
        String report = options.report();
        String text = options.textToStderr() || options.textToLog() || options.text().equals("none") ? null : options.text();
        Path reportPath = report == null ? null : path("report", report);
        Path textPath = text == null ? null : path("text", text);
        if (reportPath != null && reportPath.equals(textPath)) {
            throw new OptionsException("ncclguard: report= and text= name the same file " + report
                    + ": the text would overwrite the JSON; give each its own path");
        }
        if (reportPath != null) {
            checkTarget("report", report, reportPath);
        }
        if (textPath != null) {
            checkTarget("text", text, textPath);
        }
    }

    private static Path path(String key, String template) {
        try {
            return Path.of(template).toAbsolutePath().normalize();
        } catch (InvalidPathException e) {
            throw failure(key, template, "it is not a valid path (" + e.getReason() + ")");
        }
    }

    private static void checkTarget(String key, String template, Path file) {
        Path dir = file.getParent();
        if (dir == null || file.getFileName() == null) {
            throw failure(key, template, "it is not a file path");
        }
        if (file.getFileName().toString().indexOf('%') < 0) {
            BasicFileAttributes a = attributes(file);
            checkLengths(key, template, file, a == null || !a.isOther());
            if (a != null && a.isDirectory()) {
                throw failure(key, template, "it is a directory");
            }
            if (a != null && a.isOther()) {
                // a FIFO or a device is written through: it needs write permission itself
                if (!Files.isWritable(file)) {
                    throw failure(key, template, "permission denied");
                }
                return;
            }
        } else {
            checkLengths(key, template, file, true);
        }
        // a new file, or one replaced by a rename: the nearest existing directory must take one
        for (Path d = dir; d != null; d = d.getParent()) {
            if (d.toString().indexOf('%') >= 0) {
                continue; // known at exit only
            }
            BasicFileAttributes a = attributes(d);
            if (a == null) {
                continue; // created at exit, as JaCoCo does for its destfile
            }
            if (!Files.isDirectory(d)) {
                throw failure(key, template, d + " is not a directory");
            }
            if (!Files.isWritable(d)) {
                throw failure(key, template, "cannot create files in " + d + ": permission denied");
            }
            String why = probe(d, file.getFileName().toString());
            if (why != null) {
                throw failure(key, template, "cannot create files in " + d + ": " + why);
            }
            return;
        }
    }

    /**
     * A name over NAME_MAX or a path over PATH_MAX fails at exit whatever the directories allow;
     * %p and %h only grow at exit, so what is over now stays over.
     */
    private static void checkLengths(String key, String template, Path file, boolean renamed) {
        int bytes = utf8Length(file.toString());
        if (bytes > PATH_MAX) {
            throw failure(key, template, "the path is " + bytes + " bytes long, over the " + PATH_MAX
                    + " bytes a path may have");
        }
        int count = file.getNameCount();
        for (int i = 0; i < count; i++) {
            String n = file.getName(i).toString();
            // the report is written as "." + NAME + ".PID.RANDOM.tmp" beside it, then renamed
            int max = i == count - 1 && renamed ? NAME_MAX - TEMP_EXTRA : NAME_MAX;
            int length = utf8Length(n);
            if (length > max) {
                throw failure(key, template, "the name " + n.substring(0, Math.min(n.length(), 16)) + "... is "
                        + length + " bytes long, over the " + max + " bytes " + (max == NAME_MAX ? "a file name"
                        : "a report's file name (255 less its temporary file's " + TEMP_EXTRA + ")") + " may have");
            }
        }
    }

    /** Bytes "." + NAME + "." + pid (up to 10) + "." + 16 hex digits + ".tmp" adds to a name. */
    static final int TEMP_EXTRA = 1 + 1 + 10 + 1 + 16 + 4;

    private static int utf8Length(String s) {
        int n = 0;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            n += c < 0x80 ? 1 : c < 0x800 ? 2 : Character.isSurrogate(c) ? 2 : 3;
        }
        return n;
    }

    /**
     * Creates and removes a file in {@code dir} named as the exit's temporary file is (so a probe
     * cut short by a kill is a leftover the next write removes); null when that worked, else why.
     */
    private static String probe(Path dir, String name) {
        Path probe = dir.resolve("." + name + "." + ProcessHandle.current().pid() + "."
                + Long.toHexString(System.nanoTime()) + ".tmp");
        try {
            Files.createFile(probe);
        } catch (java.nio.file.AccessDeniedException e) {
            return "permission denied";
        } catch (NoSuchFileException e) {
            return "its file system takes no new files"; // /proc, /sys: ENOENT for a name they do not know
        } catch (IOException | RuntimeException e) {
            String why = e instanceof java.nio.file.FileSystemException fs && fs.getReason() != null
                    ? fs.getReason() : e.getClass().getSimpleName();
            return why.isEmpty() ? why : Character.toLowerCase(why.charAt(0)) + why.substring(1);
        }
        try {
            Files.delete(probe);
        } catch (IOException | RuntimeException e) {
            return "a file created there cannot be removed (" + e.getMessage() + ")";
        }
        return null;
    }

    private static BasicFileAttributes attributes(Path p) {
        try {
            return Files.readAttributes(p, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
        } catch (NoSuchFileException e) {
            return null;
        } catch (IOException | RuntimeException e) {
            return null; // not known now; the write at exit says why if it fails
        }
    }

    private static OptionsException failure(String key, String template, String why) {
        return new OptionsException("ncclguard: cannot write " + ("text".equals(key) ? "text report" : "report")
                + " to " + template + ": " + why + "; set " + key + "= to a writable path");
    }
}
