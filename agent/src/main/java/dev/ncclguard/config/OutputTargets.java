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
 * at exit. Only what is known now is checked: the part of a path before its first %p or %h, and
 * nothing is created or opened (a FIFO's reader must not see an open at start).
 */
public final class OutputTargets {
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
            return;
        }
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
