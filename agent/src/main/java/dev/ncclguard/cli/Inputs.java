package dev.ncclguard.cli;

import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileSystemException;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.PathMatcher;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.stream.Stream;
import java.util.zip.GZIPInputStream;

/**
 * What the commands read: report arguments (files, directories: every *.json below them, and
 * globs, quoted so the shell leaves them alone: {@code 'out/**}{@code /*.json'}) and explain's one
 * log (a file, or {@code -} for standard input). Inputs are regular files: a FIFO or a device
 * named as an input is refused in one line before anything is read (reading one could block for
 * ever, or never end), and directories and globs pick up regular files only. An argument that
 * names nothing is a failure, never skipped: in CI a missing report usually means a JVM that died
 * before writing it.
 */
final class Inputs {
    /** A report that could not be used, and why, in one line. */
    record Failure(String name, String why) {
    }

    /** One argument's part: the files it names, or why it names none. */
    record Named(String arg, List<Path> files, Failure failure) {
    }

    private Inputs() {
    }

    /**
     * The report files the arguments name, each once, in their order; an argument that names none
     * is a failure. A named file that exists and is not a regular file (nor a directory) stops the
     * command: it cannot be a report.
     */
    static List<Named> reports(List<String> args) throws CommandException {
        List<Named> out = new ArrayList<>();
        Set<Path> seen = new LinkedHashSet<>();
        for (String arg : args) {
            List<Path> files;
            try {
                files = expand(arg);
            } catch (IOException e) {
                out.add(new Named(arg, List.of(), new Failure(arg, "cannot read: " + reason(e))));
                continue;
            }
            if (files.isEmpty()) {
                out.add(new Named(arg, List.of(), new Failure(arg,
                        isGlob(arg) ? "no file matches" : "no .json report in this directory")));
                continue;
            }
            List<Path> fresh = new ArrayList<>();
            for (Path file : files) {
                if (seen.add(file.toAbsolutePath().normalize())) {
                    fresh.add(file); // a file named twice (by a directory and a glob) is read once
                }
            }
            out.add(new Named(arg, fresh, null));
        }
        return out;
    }

    /** The files one argument names, sorted; a plain path is named even when it does not exist. */
    static List<Path> expand(String arg) throws IOException, CommandException {
        if (isGlob(arg) && !Files.exists(Path.of(arg), LinkOption.NOFOLLOW_LINKS)) {
            return glob(arg);
        }
        Path path = Path.of(arg);
        if (Files.isDirectory(path)) {
            try (Stream<Path> walk = Files.walk(path)) {
                return walk.filter(p -> p.getFileName().toString().endsWith(".json") && Files.isRegularFile(p))
                        .sorted().toList();
            } catch (java.io.UncheckedIOException e) {
                throw e.getCause(); // a directory below it that cannot be read
            }
        }
        requireRegularOrAbsent(path, "reports");
        return List.of(path);
    }

    /**
     * Refuses a path that exists and is not a regular file (after links): a FIFO, a device, a socket.
     *
     * @param what what the command reads there, for the line: "reports", "logs"
     */
    static void requireRegularOrAbsent(Path path, String what) throws CommandException {
        BasicFileAttributes a;
        try {
            a = Files.readAttributes(path, BasicFileAttributes.class);
        } catch (IOException e) {
            return; // absent or unreadable: the read says why, as a failure of that input
        }
        if (!a.isRegularFile() && !a.isDirectory()) {
            throw new CommandException(path + " is " + kind(path) + ", not a regular file: " + what
                    + " are read from regular files" + ("logs".equals(what) ? " (or - for standard input)" : ""));
        }
    }

    /** "a FIFO", "a character device", ...: what a path that is no regular file is, from its mode. */
    static String kind(Path path) {
        try {
            int mode = (Integer) Files.getAttribute(path, "unix:mode");
            return switch (mode & 0170000) {
                case 0010000 -> "a FIFO";
                case 0020000 -> "a character device";
                case 0060000 -> "a block device";
                case 0140000 -> "a socket";
                case 0040000 -> "a directory";
                case 0100000 -> "a regular file";
                default -> "a special file";
            };
        } catch (IOException | UnsupportedOperationException | IllegalArgumentException | ClassCastException e) {
            return "a special file";
        }
    }

    /**
     * Opens explain's log: {@code -} is standard input; a file must be a regular one. Gzip is read
     * transparently, told by its magic bytes rather than by its name.
     */
    static Opened openLog(String arg, InputStream stdin) throws CommandException, IOException {
        InputStream raw;
        long size;
        String name;
        if (arg.equals("-")) {
            raw = stdin;
            size = -1;
            name = "standard input";
        } else {
            Path path = Path.of(arg);
            requireRegularOrAbsent(path, "logs");
            if (Files.isDirectory(path)) {
                throw new CommandException(path + " is a directory: give the log file itself");
            }
            try {
                raw = Files.newInputStream(path);
                size = Files.size(path);
            } catch (IOException e) {
                throw new CommandException("cannot read " + path + ": " + reason(e));
            }
            name = arg;
        }
        Counting counting = new Counting(raw);
        BufferedInputStream in = new BufferedInputStream(counting, 1 << 16);
        in.mark(2);
        int b1 = in.read();
        int b2 = in.read();
        in.reset();
        boolean gzip = b1 == 0x1f && b2 == 0x8b;
        InputStream text = gzip ? new GZIPInputStream(in, 1 << 16) : in;
        return new Opened(name, text, counting, size, gzip);
    }

    /** A log opened: its bytes as text, and how far into the (compressed) input the reading is. */
    record Opened(String name, InputStream in, Counting counting, long size, boolean gzip) {
    }

    /** Counts the bytes read from the underlying input, for progress. */
    static final class Counting extends InputStream {
        private final InputStream in;
        private volatile long read;

        Counting(InputStream in) {
            this.in = in;
        }

        long bytesRead() {
            return read;
        }

        @Override
        public int read() throws IOException {
            int b = in.read();
            if (b >= 0) {
                read++;
            }
            return b;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            int n = in.read(b, off, len);
            if (n > 0) {
                read += n;
            }
            return n;
        }

        @Override
        public void close() throws IOException {
            in.close();
        }
    }

    static boolean isGlob(String arg) {
        return arg.indexOf('*') >= 0 || arg.indexOf('?') >= 0 || arg.indexOf('[') >= 0 || arg.indexOf('{') >= 0;
    }

    /** Walks from the glob's last directory before its first wildcard; '*' stays within a directory. */
    private static List<Path> glob(String arg) throws IOException {
        int wildcard = firstWildcard(arg);
        int slash = arg.lastIndexOf('/', wildcard);
        Path base = slash < 0 ? Path.of(".") : Path.of(slash == 0 ? "/" : arg.substring(0, slash));
        String pattern = slash < 0 ? arg : arg.substring(slash + 1);
        if (!Files.isDirectory(base)) {
            return List.of();
        }
        PathMatcher matcher = FileSystems.getDefault().getPathMatcher("glob:" + pattern);
        try (Stream<Path> walk = Files.walk(base)) {
            // regular files only: a FIFO that matches would block the read for ever
            return walk.filter(p -> matcher.matches(base.relativize(p)) && Files.isRegularFile(p))
                    .map(p -> slash < 0 ? base.relativize(p) : p)
                    .sorted().toList();
        } catch (java.io.UncheckedIOException e) {
            throw e.getCause();
        }
    }

    private static int firstWildcard(String arg) {
        int first = arg.length();
        for (char c : new char[] {'*', '?', '[', '{'}) {
            int i = arg.indexOf(c);
            if (i >= 0 && i < first) {
                first = i;
            }
        }
        return first;
    }

    static String reason(IOException e) {
        if (e instanceof NoSuchFileException) {
            return "no such file";
        }
        if (e instanceof AccessDeniedException) {
            return "permission denied";
        }
        if (e instanceof FileSystemException fs && fs.getReason() != null && !fs.getReason().isEmpty()) {
            String why = fs.getReason();
            return why.substring(0, 1).toLowerCase(Locale.ROOT) + why.substring(1);
        }
        String m = e.getMessage();
        return m == null ? e.getClass().getSimpleName() : m;
    }
}
