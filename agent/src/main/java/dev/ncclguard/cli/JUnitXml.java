package dev.ncclguard.cli;

import java.io.BufferedWriter;
import java.io.Closeable;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/**
 * check's verdict as JUnit XML, which CI report pages read (Jenkins, GitLab, GitHub actions): one
 * testcase per report, a failure per leak with its creating stack, an error per report that
 * cannot be read. A report of a million leaks must not make a page nobody can open: past
 * {@link #MAX_FAILURES} leaks of one report, one more failure counts the rest.
 *
 * <p>The testcases are written to a temporary file as each report is read (the suite's counts come
 * first in the document and are known only at the end), then the whole document goes to its
 * place atomically.
 */
final class JUnitXml implements Closeable {
    static final int MAX_FAILURES = 1000;

    private final Path body;
    private final Writer out;
    private long tests;
    private long failures;
    private long errors;

    JUnitXml() throws IOException {
        body = Files.createTempFile("ncclguard-junit", ".xml");
        out = new BufferedWriter(new OutputStreamWriter(Files.newOutputStream(body), StandardCharsets.UTF_8), 1 << 16);
    }

    /** Keeps a report's first {@link #MAX_FAILURES} leaks for its testcase while the report is read. */
    static final class Leaks implements ReportFile.Entries {
        final List<ReportFile.LeakEntry> kept = new ArrayList<>();
        final LeakLines rest = new LeakLines();
        long count;

        @Override
        public void leak(ReportFile.LeakEntry leak) {
            if (kept.size() < MAX_FAILURES) {
                kept.add(leak);
            } else {
                rest.leak(leak);
            }
            count++;
        }
    }

    void report(ReportFile r, Leaks leaks, boolean requireFull) throws IOException {
        tests++;
        out.write("    <testcase classname=\"ncclguard\" name=\"");
        attribute(r.path() + " (" + r.process() + ")");
        out.write("\" time=\"0\">\n");
        if (r.partial() && requireFull) {
            failures++;
            out.write("      <failure type=\"partial report\" message=\"");
            attribute(r.attached().words() + ": --require-full wants a report of the whole run");
            out.write("\">");
            text("the agent was attached to the running JVM; what was made before the attach is not in the report\n");
            out.write("</failure>\n");
        }
        for (ReportFile.LeakEntry leak : leaks.kept) {
            failures++;
            out.write("      <failure type=\"");
            attribute(leak.kind().title());
            out.write("\" message=\"");
            attribute(Words.leak(leak));
            out.write("\">");
            text(failureText(leak));
            out.write("</failure>\n");
        }
        if (leaks.count > leaks.kept.size()) {
            failures++;
            long more = leaks.count - leaks.kept.size();
            out.write("      <failure type=\"more leaks\" message=\"");
            attribute(Words.thousands(more) + " more leaks in this report (the JSON report lists every one)");
            out.write("\">");
            text(String.join("\n", leaks.rest.lines()) + "\n");
            out.write("</failure>\n");
        }
        if (r.summary().suppressed() > 0) {
            out.write("      <system-out>");
            text(r.summary().suppressed() + " suppressed leaks (listed in the report, not counted)\n");
            out.write("</system-out>\n");
        }
        out.write("    </testcase>\n");
    }

    void unreadable(Inputs.Failure f) throws IOException {
        tests++;
        errors++;
        out.write("    <testcase classname=\"ncclguard\" name=\"");
        attribute(f.name());
        out.write("\" time=\"0\">\n      <error type=\"unreadable report\" message=\"");
        attribute(f.why());
        out.write("\">");
        text("missing, malformed or truncated: " + f.why() + "\n");
        out.write("</error>\n    </testcase>\n");
    }

    /** "Leaked communicator 0x.. (rank ..): created by api on thread "t" at TIME through bridge", then the stack. */
    static String failureText(ReportFile.LeakEntry leak) {
        StringBuilder t = new StringBuilder();
        String title = leak.kind().title();
        t.append(Character.toUpperCase(title.charAt(0))).append(title.substring(1)).append(' ').append(leak.handle());
        String details = Words.details(leak.details());
        if (!details.isEmpty()) {
            t.append(" (").append(details).append(')');
        }
        t.append(": created by ").append(leak.api()).append(" on thread \"").append(leak.thread()).append("\" at ")
                .append(leak.createdAt()).append(" through ").append(leak.bridge());
        if (!leak.cleanup().equals("none")) {
            t.append("; cleanup ").append(Words.cleanup(leak.kind(), leak.cleanup()));
        }
        if (leak.cleanupNote() != null) {
            t.append(" (").append(leak.cleanupNote()).append(')');
        }
        t.append('\n');
        if (leak.stack().isEmpty()) {
            t.append("  (no creating stack recorded: stacks=off)\n");
        }
        for (String frame : leak.stack()) {
            t.append("  at ").append(frame).append('\n');
        }
        return t.toString();
    }

    /** Writes the whole document to {@code target}. */
    void writeTo(Path target) throws CommandException, IOException {
        out.flush();
        OutputFile.write(target, "--junit-xml", sink -> {
            Writer w = new OutputStreamWriter(sink, StandardCharsets.UTF_8);
            String counts = " tests=\"" + tests + "\" failures=\"" + failures + "\" errors=\"" + errors + "\"";
            w.write("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
            w.write("<testsuites name=\"ncclguard check\"" + counts + ">\n");
            w.write("  <testsuite name=\"ncclguard check\"" + counts + " skipped=\"0\" time=\"0\" timestamp=\""
                    + Instant.now().toString().replaceFirst("\\.\\d+Z$", "Z") + "\">\n");
            w.flush();
            Files.copy(body, sink);
            w.write("  </testsuite>\n</testsuites>\n");
            w.flush();
        });
    }

    @Override
    public void close() throws IOException {
        try {
            out.close();
        } finally {
            Files.deleteIfExists(body);
        }
    }

    private void attribute(String s) throws IOException {
        escape(s, true);
    }

    private void text(String s) throws IOException {
        escape(s, false);
    }

    /** XML 1.0 allows no control characters but tab and line ends, even as references: they become U+FFFD. */
    private void escape(String s, boolean attribute) throws IOException {
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '&' -> out.write("&amp;");
                case '<' -> out.write("&lt;");
                case '>' -> out.write("&gt;");
                case '"' -> out.write(attribute ? "&quot;" : "\"");
                case '\n' -> out.write(attribute ? "&#10;" : "\n");
                case '\t' -> out.write(attribute ? "&#9;" : "\t");
                case '\r' -> out.write("&#13;");
                default -> {
                    if (c < 0x20 || c == 0xfffe || c == 0xffff) {
                        out.write('\ufffd');
                    } else if (Character.isHighSurrogate(c) && i + 1 < s.length()
                            && Character.isLowSurrogate(s.charAt(i + 1))) {
                        out.write(c);
                        out.write(s.charAt(++i));
                    } else if (Character.isSurrogate(c)) {
                        out.write('\ufffd');
                    } else {
                        out.write(c);
                    }
                }
            }
        }
    }
}
