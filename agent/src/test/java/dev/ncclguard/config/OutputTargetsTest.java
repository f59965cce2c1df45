package dev.ncclguard.config;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class OutputTargetsTest {
    @TempDir
    Path dir;

    private static void check(String args) {
        OutputTargets.check(Options.parse(args, Map.of(), Map.of()));
    }

    private static String error(String args) {
        return assertThrows(OptionsException.class, () -> check(args)).getMessage();
    }

    @Test
    void reportPathThatIsADirectoryIsRefusedWithOneLine() {
        assertEquals("ncclguard: cannot write report to " + dir + ": it is a directory; set report= to a"
                + " writable path", error("report=" + dir));
    }

    @Test
    void textPathThatIsADirectoryIsRefusedWithOneLine() {
        assertEquals("ncclguard: cannot write text report to " + dir + ": it is a directory; set text= to a"
                + " writable path", error("text=" + dir));
    }

    @Test
    void parentThatIsAFileIsRefused() throws Exception {
        Path file = Files.writeString(dir.resolve("a-file"), "x");
        assertEquals("ncclguard: cannot write report to " + file + "/sub/r.json: " + file + " is not a directory;"
                + " set report= to a writable path", error("report=" + file + "/sub/r.json"));
    }

    @Test
    void theSamePathForReportAndTextIsRefused() {
        Path same = dir.resolve("r");
        assertEquals("ncclguard: report= and text= name the same file " + same + ": the text would overwrite the"
                + " JSON; give each its own path", error("report=" + same + ",text=" + dir.resolve("x/../r")));
    }

    @Test
    void textLogIsTheApplicationsLoggingNotAFileNamedLog() {
        assertDoesNotThrow(() -> check("report=log,text=log"));
    }

    @Test
    void missingParentsAreAcceptedSinceTheyAreCreatedAtExit() {
        assertDoesNotThrow(() -> check("report=" + dir.resolve("a/b/r.json") + ",text=" + dir.resolve("a/t.txt")));
    }

    @Test
    void aPartWithPidOrHostIsLeftToTheExit() throws Exception {
        Path file = Files.writeString(dir.resolve("a-file"), "x");
        // %p in the name: the directory is still checked; %h in a directory: only what lies above it
        assertDoesNotThrow(() -> check("report=" + dir + "/%h/r-%p.json"));
        assertEquals(true, error("report=" + file + "/r-%p.json").contains("is not a directory"));
    }

    @Test
    void aFifoIsAcceptedSinceItIsWrittenThrough() throws Exception {
        Path fifo = dir.resolve("fifo");
        Process p = new ProcessBuilder("mkfifo", fifo.toString()).inheritIO().start();
        p.waitFor(10, TimeUnit.SECONDS);
        assertEquals(0, p.exitValue());
        assertDoesNotThrow(() -> check("text=" + fifo));
    }

    @Test
    void stderrAndNoneNeedNoCheck() {
        assertDoesNotThrow(() -> check("text=stderr"));
        assertDoesNotThrow(() -> check("text=none,report=none"));
    }
}
