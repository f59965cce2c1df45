package dev.ncclguard.config;

import dev.ncclguard.catalog.Kind;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Known, accepted leaks (option {@code suppress=PATH}), after LeakSanitizer's suppression files:
 * one {@code KIND:PATTERN} per line, KIND one of comm, event, stream, devcomm, memory or leak (any kind); '#'
 * starts a comment. A leak is suppressed when a frame of its creating stack matches a pattern:
 * {@code *} matches any run of characters, and the pattern matches anywhere in the frame unless
 * it starts with {@code ^} or ends with {@code $}. Frames read as in the report:
 * {@code pkg.Cls.method(Cls.java:42)}.
 */
public final class Suppressions {
    public static final Suppressions NONE = new Suppressions("none", List.of(), List.of());
    /** The kind of a line naming a calling library whose NCCL and CUDA calls the native part leaves out. */
    public static final String LIBRARY = "library";

    /** One line of the file. */
    public record Rule(Kind kind, String pattern, int line) {
        /** The line as written, for the report: "comm:Rank.initCommunicator". */
        public String text() {
            return (kind == null ? "leak" : kind.word()) + ":" + pattern;
        }

        boolean matches(Kind leakKind, List<String> stack) {
            if (kind != null && kind != leakKind) {
                return false;
            }
            for (String frame : stack) {
                if (Glob.matches(pattern, frame)) {
                    return true;
                }
            }
            return false;
        }
    }

    private final String source;
    private final List<Rule> rules;
    private final List<String> libraries;

    private Suppressions(String source, List<Rule> rules, List<String> libraries) {
        this.source = source;
        this.rules = List.copyOf(rules);
        this.libraries = List.copyOf(libraries);
    }

    /**
     * The option's value: "none", or a file read now, so a bad file stops the JVM at start rather
     * than at exit. Null when the file cannot be read (the option's usual error line follows).
     *
     * @throws IllegalArgumentException with one line naming the file, the line and the fault
     */
    public static Suppressions option(String value) {
        if (value.equals("none")) {
            return NONE;
        }
        if (value.isEmpty()) {
            return null;
        }
        List<String> lines;
        try {
            lines = TextFile.lines(Path.of(value));
        } catch (TextFile.Unusable e) {
            if (e.missing) {
                return null; // the option's usual error line follows
            }
            throw new IllegalArgumentException("ncclguard: invalid suppression file '" + value
                    + "' for option suppress: it " + e.getMessage());
        } catch (RuntimeException e) {
            return null; // not a path at all: the option's usual error line follows
        }
        try {
            return new Suppressions(value, parse(lines), libraries(lines));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("ncclguard: invalid suppression file '" + value
                    + "' for option suppress: " + e.getMessage());
        }
    }

    /** The rules of a suppression file's lines; the fault of the first bad line as the message. */
    public static List<Rule> parse(List<String> lines) {
        List<Rule> rules = new ArrayList<>();
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i).strip();
            if (line.isEmpty() || line.startsWith("#")) {
                continue;
            }
            int colon = line.indexOf(':');
            if (colon < 0) {
                throw new IllegalArgumentException("line " + (i + 1) + ": expected KIND:PATTERN"
                        + " (KIND comm, event, stream, devcomm, memory or leak), got '" + line + "'");
            }
            String word = line.substring(0, colon).strip().toLowerCase(Locale.ROOT);
            String pattern = line.substring(colon + 1).strip();
            if (word.equals(LIBRARY)) {
                if (pattern.isEmpty()) {
                    throw new IllegalArgumentException("line " + (i + 1) + ": empty library name");
                }
                continue; // the native part's: libraries()
            }
            Kind kind = null;
            if (!word.equals("leak")) {
                for (Kind k : Kind.values()) {
                    if (k.word().equals(word)) {
                        kind = k;
                    }
                }
                if (kind == null) {
                    throw new IllegalArgumentException("line " + (i + 1) + ": unknown kind '" + word
                            + "' (expected comm, event, stream, devcomm, memory, leak or library)");
                }
            }
            if (pattern.isEmpty() || pattern.equals("^") || pattern.equals("$") || pattern.equals("^$")) {
                throw new IllegalArgumentException("line " + (i + 1) + ": empty pattern");
            }
            rules.add(new Rule(kind, pattern, i + 1));
        }
        return rules;
    }

    /**
     * The libraries of {@code library:NAME} lines: a file name (libfoo.so, libfoo.so.1, or libfoo for
     * both) or a path; calls these libraries make into NCCL and CUDA are not tracked at all.
     */
    static List<String> libraries(List<String> lines) {
        List<String> names = new ArrayList<>();
        for (String raw : lines) {
            String line = raw.strip();
            int colon = line.indexOf(':');
            if (!line.startsWith("#") && colon > 0
                    && line.substring(0, colon).strip().toLowerCase(Locale.ROOT).equals(LIBRARY)) {
                names.add(line.substring(colon + 1).strip());
            }
        }
        return names;
    }

    public static Suppressions of(String source, List<Rule> rules) {
        return new Suppressions(source, rules, List.of());
    }

    /** The calling libraries whose NCCL and CUDA calls the native part leaves out (lines library:NAME). */
    public List<String> libraries() {
        return libraries;
    }

    /** The first rule that suppresses a leak of {@code kind} created at {@code stack}, or null. */
    public Rule match(Kind kind, List<String> stack) {
        for (Rule rule : rules) {
            if (rule.matches(kind, stack)) {
                return rule;
            }
        }
        return null;
    }

    public List<Rule> rules() {
        return rules;
    }

    public boolean isEmpty() {
        return rules.isEmpty();
    }

    @Override
    public String toString() {
        return source;
    }

    /** LeakSanitizer's patterns: '*' is any run, '^' and '$' anchor, else a match anywhere. */
    static final class Glob {
        private Glob() {
        }

        static boolean matches(String pattern, String text) {
            boolean start = pattern.startsWith("^");
            boolean end = pattern.endsWith("$") && pattern.length() > (start ? 1 : 0);
            String p = pattern.substring(start ? 1 : 0, pattern.length() - (end ? 1 : 0));
            if (!start) {
                p = "*" + p;
            }
            if (!end) {
                p = p + "*";
            }
            return wildcard(p, text);
        }

        /** Greedy '*' matching with backtracking to the last star: linear for these short patterns. */
        private static boolean wildcard(String p, String t) {
            int pi = 0;
            int ti = 0;
            int star = -1;
            int mark = 0;
            while (ti < t.length()) {
                if (pi < p.length() && p.charAt(pi) == '*') {
                    star = pi++;
                    mark = ti;
                } else if (pi < p.length() && p.charAt(pi) == t.charAt(ti)) {
                    pi++;
                    ti++;
                } else if (star >= 0) {
                    pi = star + 1;
                    ti = ++mark;
                } else {
                    return false;
                }
            }
            while (pi < p.length() && p.charAt(pi) == '*') {
                pi++;
            }
            return pi == p.length();
        }
    }
}
