package dev.ncclguard.config;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
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
    void aDirectoryOfTheProcFileSystemIsRefusedAtStart() {
        // permission bits let root write /proc; creating a file there does not
        assertEquals("ncclguard: cannot write report to /proc/x.json: cannot create files in /proc: its file system"
                + " takes no new files; set report= to a writable path", error("report=/proc/x.json"));
        assertTrue(error("report=/sys/kernel/x.json").startsWith("ncclguard: cannot write report to /sys/kernel/x.json:"
                + " cannot create files in /sys/kernel: "), error("report=/sys/kernel/x.json"));
        assertTrue(error("text=/proc/x.txt").endsWith("; set text= to a writable path"));
    }

    @Test
    void theProbeLeavesNothingBehind() throws Exception {
        check("report=" + dir.resolve("r.json"));
        try (java.util.stream.Stream<Path> left = Files.list(dir)) {
            assertEquals(List.of(), left.toList());
        }
    }

    @Test
    void aNameOverNameMaxIsRefusedAtStart() {
        String name = "r".repeat(300) + ".json";
        assertEquals("ncclguard: cannot write report to " + dir + "/" + name + ": the name rrrrrrrrrrrrrrrr... is 305"
                + " bytes long, over the 222 bytes a report's file name (255 less its temporary file's 33) may have;"
                + " set report= to a writable path", error("report=" + dir + "/" + name));
        assertDoesNotThrow(() -> check("report=" + dir + "/" + "r".repeat(217) + ".json"));
        assertTrue(error("report=" + dir + "/" + "d".repeat(256) + "/r.json").contains("over the 255 bytes a file name"));
    }

    @Test
    void aPathOverPathMaxIsRefusedAtStart() {
        String deep = dir + "/a".repeat(5000) + "/r.json";
        assertTrue(error("report=" + deep).contains(": the path is " + deep.length() + " bytes long, over the 4095"
                + " bytes a path may have;"), error("report=" + deep));
    }

    @Test
    void stderrAndNoneNeedNoCheck() {
        assertDoesNotThrow(() -> check("text=stderr"));
        assertDoesNotThrow(() -> check("text=none,report=none"));
    }
}
