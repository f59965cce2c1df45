package dev.ncclguard.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TextFileTest {
    @TempDir
    Path dir;

    /** A FIFO the test makes itself (never the machine's own /dev); opening one to read blocks until a writer comes. */
    static Path fifo(Path path) throws Exception {
        Process p = new ProcessBuilder("mkfifo", path.toString()).inheritIO().start();
        assertTrue(p.waitFor(10, TimeUnit.SECONDS));
        assertEquals(0, p.exitValue(), "mkfifo " + path);
        return path;
    }

    @Test
    void aFifoIsRefusedBeforeAnythingIsRead() throws Exception {
        Path fifo = fifo(dir.resolve("rules.supp"));
        TextFile.Unusable e = assertTimeoutPreemptively(Duration.ofSeconds(10),
                () -> assertThrows(TextFile.Unusable.class, () -> TextFile.lines(fifo)));
        assertEquals("is a FIFO, not a regular file", e.getMessage());
    }

    @Test
    void aFileAboveTheLimitIsRefusedWithoutReadingIt() throws Exception {
        Path big = dir.resolve("big.txt");
        Files.write(big, new byte[TextFile.MAX_BYTES + 1]);
        assertEquals("is larger than 1 MiB, the limit for this file",
                assertThrows(TextFile.Unusable.class, () -> TextFile.lines(big)).getMessage());
    }

    @Test
    void aFileOfExactlyTheLimitIsRead() throws Exception {
        byte[] bytes = new byte[TextFile.MAX_BYTES];
        java.util.Arrays.fill(bytes, (byte) 'x');
        Path full = Files.write(dir.resolve("full.txt"), bytes);
        assertEquals(1, TextFile.lines(full).size());
    }

    @Test
    void badUtf8DeepInAFileIsNamedAtItsLineAndColumn() throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.write("# first\r\n".getBytes(StandardCharsets.UTF_8));
        out.write("comm:Caf\u00e9.init\n".getBytes(StandardCharsets.UTF_8));
        out.write("event:x".getBytes(StandardCharsets.UTF_8));
        out.write(0xFF);
        out.write('\n');
        Path file = Files.write(dir.resolve("bad.supp"), out.toByteArray());
        assertEquals("line 3, column 8: not UTF-8 text (byte 0xFF)",
                assertThrows(TextFile.Unusable.class, () -> TextFile.lines(file)).getMessage());
    }

    @Test
    void linesEndAtLineFeedsCarriageReturnsOrBoth() throws Exception {
        Path file = Files.writeString(dir.resolve("ends.txt"), "\uFEFFa\r\nb\rc\n\nd");
        assertEquals(List.of("a", "b", "c", "", "d"), TextFile.lines(file));
    }

    @Test
    void aMissingFileIsNamedAsMissing() {
        TextFile.Unusable e = assertThrows(TextFile.Unusable.class, () -> TextFile.lines(dir.resolve("nope")));
        assertTrue(e.missing);
        assertEquals("does not exist", e.getMessage());
    }

    @Test
    void aSuppressionFileThatIsAFifoStopsTheStartWithOneLine() throws Exception {
        Path fifo = fifo(dir.resolve("known.supp"));
        IllegalArgumentException e = assertTimeoutPreemptively(Duration.ofSeconds(10),
                () -> assertThrows(IllegalArgumentException.class, () -> Options.parse("suppress=" + fifo, Map.of(), Map.of())));
        assertEquals("ncclguard: invalid suppression file '" + fifo + "' for option suppress: it is a FIFO, not a"
                + " regular file", e.getMessage());
    }

    @Test
    void aBindingsFileThatIsAFifoStopsTheStartWithOneLine() throws Exception {
        Path fifo = fifo(dir.resolve("b.txt"));
        Bindings.BindingsException e = assertTimeoutPreemptively(Duration.ofSeconds(10),
                () -> assertThrows(Bindings.BindingsException.class, () -> Bindings.load(fifo)));
        assertEquals("ncclguard: bindings file " + fifo + " is a FIFO, not a regular file; set bindings= to a"
                + " bindings file, or none", e.getMessage());
    }

    @Test
    void badUtf8InABindingsFileIsNamedAtItsLineAndColumn() throws Exception {
        byte[] head = "# ok\ncom.acme.Gpu#destroy(J)I = ncclCommDestroy handle=0 # ".getBytes(StandardCharsets.UTF_8);
        byte[] bytes = java.util.Arrays.copyOf(head, head.length + 1);
        bytes[head.length] = (byte) 0x80;
        Path file = Files.write(dir.resolve("b.txt"), bytes);
        assertEquals("ncclguard: bindings file " + file + " line 2, column 55: not UTF-8 text (byte 0x80); set"
                + " bindings= to a bindings file, or none",
                assertThrows(Bindings.BindingsException.class, () -> Bindings.load(file)).getMessage());
    }
}
