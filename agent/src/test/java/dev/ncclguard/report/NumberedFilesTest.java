package dev.ncclguard.report;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class NumberedFilesTest {
    private static final NumberedFiles.Names NAMES = new NumberedFiles.Names(1, "h", "20261129T194004Z", Map.of("RANK", "0"));

    @TempDir
    Path dir;

    private long write(String name, String content, long number) {
        return NumberedFiles.write(dir.resolve(name).toString(), content.getBytes(StandardCharsets.UTF_8), "report",
                NAMES, number);
    }

    private String read(String name) throws IOException {
        return Files.readString(dir.resolve(name));
    }

    @Test
    void aRepeatedNameTakesTheNextFreeNumber() throws IOException {
        assertEquals(0, write("r-%p-%n.json", "first", -1));
        assertEquals(1, write("r-%p-%n.json", "second", -1));
        assertEquals("first", read("r-1-0.json"));
        assertEquals("second", read("r-1-1.json"));
    }

    @Test
    void aFreedNumberIsTakenAgain() throws IOException {
        write("r-%n.json", "a", -1);
        write("r-%n.json", "b", -1);
        Files.delete(dir.resolve("r-0.json"));
        assertEquals(0, write("r-%n.json", "c", -1));
        assertEquals("c", read("r-0.json"));
    }

    @Test
    void withMaxTheOldestIsReplacedOnceEveryNumberIsTaken() throws IOException {
        write("r-%n{2}.json", "a", -1);
        write("r-%n{2}.json", "b", -1);
        Files.setLastModifiedTime(dir.resolve("r-0.json"), FileTime.fromMillis(2_000_000_000_000L));
        Files.setLastModifiedTime(dir.resolve("r-1.json"), FileTime.fromMillis(1_000_000_000_000L));
        assertEquals(1, write("r-%n{2}.json", "c", -1));
        assertEquals("a", read("r-0.json"));
        assertEquals("c", read("r-1.json"));
    }

    @Test
    void aGivenNumberIsUsedAsItIs() throws IOException {
        assertEquals(7, write("t-%n.txt", "text", 7));
        assertEquals("text", read("t-7.txt"));
    }

    @Test
    void aNameWithoutNumberIsReplaced() throws IOException {
        assertEquals(-1, write("r-%{RANK}.json", "a", -1));
        assertEquals(-1, write("r-%{RANK}.json", "b", -1));
        assertEquals("b", read("r-0.json"));
    }

    @Test
    void noTemporaryFileIsLeftBehind() throws IOException {
        write("r-%n.json", "a", -1);
        write("r-%n.json", "b", -1);
        try (Stream<Path> files = Files.list(dir)) {
            assertEquals(List.of("r-0.json", "r-1.json"), files.map(p -> p.getFileName().toString()).sorted().toList());
        }
    }

    @Test
    void missingDirectoriesAreCreated() throws IOException {
        assertEquals(0, write("a/b/r-%n.json", "x", -1));
        assertEquals("x", read("a/b/r-0.json"));
    }

    @Test
    void anUnwritableDirectoryFailsWithoutThrowing() throws IOException {
        Path file = Files.writeString(dir.resolve("plain"), "not a directory");
        assertEquals(-1, NumberedFiles.write(file.resolve("r-%n.json").toString(), new byte[] {1}, "report", NAMES, -1));
        assertEquals("not a directory", Files.readString(file));
    }

    @Test
    void writersAtOnceEachGetANumberOfTheirOwn() throws Exception {
        int writers = 8;
        ExecutorService pool = Executors.newFixedThreadPool(writers);
        try {
            List<Future<Long>> taken = new ArrayList<>();
            for (int i = 0; i < writers; i++) {
                String content = "writer " + i;
                taken.add(pool.submit((Callable<Long>) () -> write("r-%n.json", content, -1)));
            }
            List<Long> numbers = new ArrayList<>();
            for (Future<Long> f : taken) {
                numbers.add(f.get());
            }
            assertEquals(writers, numbers.stream().distinct().count(), numbers.toString());
            for (long n : numbers) {
                assertTrue(read("r-" + n + ".json").startsWith("writer "));
            }
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void theFileHoldsTheWholeContent() throws IOException {
        byte[] big = new byte[3 << 20];
        java.util.Arrays.fill(big, (byte) 'x');
        NumberedFiles.write(dir.resolve("big-%n.json").toString(), big, "report", NAMES, -1);
        assertArrayEquals(big, Files.readAllBytes(dir.resolve("big-0.json")));
        assertFalse(Files.exists(dir.resolve("big-1.json")));
    }
}
