package dev.ncclguard.cli;

import java.io.IOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.PathMatcher;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;

/**
 * The report arguments of check, merge and explain: files, directories (every *.json below them)
 * and globs (quoted so the shell leaves them alone: {@code 'out/**}{@code /*.json'}). An argument
 * that names nothing is a failure, never skipped: in CI a missing report usually means a JVM that
 * died before writing it.
 */
final class ReportInputs {
    /** A report that could not be used, and why, in one line. */
    record Failure(String name, String why) {
    }

    /** The reports read, and the arguments or files that failed. */
    record Loaded(List<ReportFile> reports, List<Failure> failures) {
    }

    private ReportInputs() {
    }

    static Loaded load(List<String> args) {
        List<ReportFile> reports = new ArrayList<>();
        List<Failure> failures = new ArrayList<>();
        Set<Path> seen = new LinkedHashSet<>();
        for (String arg : args) {
            List<Path> files;
            try {
                files = expand(arg);
            } catch (IOException e) {
                failures.add(new Failure(arg, "cannot read: " + reason(e)));
                continue;
            }
            if (files.isEmpty()) {
                failures.add(new Failure(arg, isGlob(arg) ? "no file matches" : "no .json report in this directory"));
                continue;
            }
            for (Path file : files) {
                if (!seen.add(file.toAbsolutePath().normalize())) {
                    continue; // named twice, e.g. by a directory and a glob
                }
                try {
                    reports.add(ReportFile.read(file));
                } catch (ReportFile.BadReportException e) {
                    failures.add(new Failure(file.toString(), e.getMessage()));
                }
            }
        }
        return new Loaded(reports, failures);
    }

    /** The files one argument names, sorted; a plain file is named even when it does not exist. */
    static List<Path> expand(String arg) throws IOException {
        if (isGlob(arg)) {
            return glob(arg);
        }
        Path path = Path.of(arg);
        if (Files.isDirectory(path)) {
            try (Stream<Path> walk = Files.walk(path)) {
                return walk.filter(p -> Files.isRegularFile(p) && p.getFileName().toString().endsWith(".json"))
                        .sorted().toList();
            }
        }
        return List.of(path);
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
            return walk.filter(p -> Files.isRegularFile(p) && matcher.matches(base.relativize(p)))
                    .map(p -> slash < 0 ? base.relativize(p) : p)
                    .sorted().toList();
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
        String m = e.getMessage();
        return m == null ? e.getClass().getSimpleName() : m;
    }
}
