package dev.ncclguard.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** How every file the CLI writes reaches its place: whole, never through a link, devices and FIFOs written through. */
class OutputFileTest {
    @TempDir
    Path dir;

    private static OutputFile.Content text(String s) {
        return out -> out.write(s.getBytes(StandardCharsets.UTF_8));
    }

    private List<String> names() throws IOException {
        try (Stream<Path> files = Files.list(dir)) {
            return files.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }

    @Test
    void aNewFileAndItsMissingDirectoriesAreCreated() throws Exception {
        Path target = dir.resolve("a/b/page.html");
        OutputFile.write(target, "--html", text("whole"));
        assertEquals("whole", Files.readString(target));
    }

    @Test
    void aWriteThatFailsHalfWayLeavesTheOldFileAsItWasAndNoTemporaryFile() throws Exception {
        Path target = Files.writeString(dir.resolve("page.html"), "old page");
        CommandException e = assertThrows(CommandException.class, () -> OutputFile.write(target, "--html", out -> {
            out.write("half a new pa".getBytes(StandardCharsets.UTF_8));
            throw new IOException("disk full");
        }));
        assertEquals("cannot write --html " + target + ": disk full", e.getMessage());
        assertEquals("old page", Files.readString(target));
        assertEquals(List.of("page.html"), names());
    }

    @Test
    void aSymbolicLinkIsReplacedNeverWrittenThrough() throws Exception {
        Path elsewhere = Files.writeString(dir.resolve("precious.txt"), "keep me");
        Path link = Files.createSymbolicLink(dir.resolve("merge.html"), elsewhere);
        OutputFile.write(link, "--html", text("the page"));
        assertEquals("keep me", Files.readString(elsewhere));
        assertFalse(Files.isSymbolicLink(link));
        assertEquals("the page", Files.readString(link));
    }

    @Test
    void aFifoIsWrittenThroughNotReplaced() throws Exception {
        Path fifo = Fifos.make(dir.resolve("pipe"));
        CompletableFuture<byte[]> reader = CompletableFuture.supplyAsync(() -> {
            try (InputStream in = Files.newInputStream(fifo)) {
                return in.readAllBytes();
            } catch (IOException e) {
                throw new RuntimeException(e);
            }
        });
        assertTimeoutPreemptively(Duration.ofSeconds(20), () -> OutputFile.write(fifo, "--trace", text("to the reader")));
        assertEquals("to the reader", new String(reader.get(20, TimeUnit.SECONDS), StandardCharsets.UTF_8));
        assertEquals("a FIFO", Inputs.kind(fifo), "still a FIFO");
    }

    @Test
    void aPseudoTerminalIsWrittenThroughAsACharacterDevice() throws Exception {
        // script(1) makes the terminal; the CLI writes its JSON onto that terminal's own device path
        assumeTrue(Files.isExecutable(Fifos.SCRIPT), "util-linux script makes the pseudo-terminal");
        Path report = TestReports.process(1, "a").comm("00000000000000aa", 0, 1, 0x10, 100, 200).write(dir, "r.json");
        Fifos.Terminal t = Fifos.cliInTerminal(dir, "merge " + report + " --json \"$(tty)\"");
        assertEquals(0, t.status(), t.screen());
        assertTrue(t.screen().contains("\"schema\": \"ncclguard-merge/1\""), "the JSON reached the terminal: " + t.screen());
        assertTrue(t.screen().contains("ncclguard merge: JSON written to /dev/pts/"), t.screen());
    }

    @Test
    void aDirectoryIsRefusedInOneLine() throws Exception {
        Path d = Files.createDirectories(dir.resolve("out"));
        CommandException e = assertThrows(CommandException.class, () -> OutputFile.write(d, "--json", text("x")));
        assertEquals("cannot write --json " + d + ": it is a directory", e.getMessage());
    }

    @Test
    void aTemporaryFileLeftByADeadWriterIsRemovedAtTheNextWrite() throws Exception {
        Process gone = new ProcessBuilder("true").start();
        gone.waitFor();
        Path leftover = Files.writeString(dir.resolve(".page.html." + gone.pid() + ".1f2e3d.tmp"), "half");
        Path alive = Files.writeString(dir.resolve(".page.html." + ProcessHandle.current().pid() + ".abc.tmp"), "mine");
        Path other = Files.writeString(dir.resolve(".other.html." + gone.pid() + ".1f2e3d.tmp"), "not ours");
        OutputFile.write(dir.resolve("page.html"), "--html", text("page"));
        assertFalse(Files.exists(leftover, LinkOption.NOFOLLOW_LINKS), "a dead writer's half page");
        assertTrue(Files.exists(alive), "a live writer's file is left alone");
        assertTrue(Files.exists(other), "another name's file is left alone");
    }
}
