package dev.ncclguard.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ncclguard.log.OneLine;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Every error line of the commands that shows a value of the user's is one line (issue 34, item 7). */
class ErrorLinesTest {
    /** Line feed, carriage return, tab, ESC, U+2028 and a C1 control (NEL). */
    static final String NASTY = "a\nb\rc\td\u001b[31me\u2028f\u0085g";

    @TempDir
    Path dir;

    private String err(String... args) {
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        Cli.run(args, new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        return err.toString(StandardCharsets.UTF_8);
    }

    static void assertOneLine(String text) {
        assertTrue(text.endsWith("\n"), text);
        String line = text.substring(0, text.length() - 1);
        for (int i = 0; i < line.length(); i++) {
            assertFalse(OneLine.isControl(line.charAt(i)), "a control character at " + i + ": " + line);
        }
        assertTrue(line.contains("a\\nb\\rc\\td\\u001b[31me\\u2028f\\u0085g"), line);
    }

    @Test
    void anUnknownCommandIsOneLine() {
        assertOneLine(err(NASTY));
    }

    @Test
    void anUnknownOptionIsOneLine() {
        assertOneLine(err("merge", "--" + NASTY, "x.json"));
    }

    @Test
    void aBadOptionValueIsOneLine() {
        assertOneLine(err("attach", NASTY));
    }

    @Test
    void anOutputThatCannotBeUsedIsOneLine() throws Exception {
        Path report = TestReports.process(101, "node-a").comm("9a87a0bcadf6c8e0", 0, 1, 0x10, 100, 900)
                .write(dir, "r.json");
        Path html = Files.createDirectories(dir.resolve(NASTY));
        assertOneLine(err("merge", report.toString(), "--html", html.toString()));
    }

    @Test
    void anInputThatCannotBeUsedIsOneLine() {
        String err = err("explain", dir.resolve(NASTY).toString());
        assertOneLine(err);
    }
}
