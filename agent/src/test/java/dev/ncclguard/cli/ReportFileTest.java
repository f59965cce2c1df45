package dev.ncclguard.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ncclguard.catalog.Kind;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ReportFileTest {
    @TempDir
    Path dir;

    private Path leaky() throws Exception {
        return TestReports.process(4242, "gpu-01").comm("00000000000000aa", 0, 2, 0x10, 100, 900)
                .comm("00000000000000aa", 1, 2, 0x20, 110, 0).event(0x30, 200).write(dir, "leaky.json");
    }

    private String bad(String json) throws Exception {
        return bad(json.getBytes(StandardCharsets.UTF_8));
    }

    private String bad(byte[] json) throws Exception {
        Path file = Files.write(dir.resolve("bad.json"), json);
        return assertThrows(ReportFile.BadReportException.class, () -> ReportFile.read(file, ReportFile.NONE))
                .getMessage();
    }

    @Test
    void readsWhatTheAgentWrites() throws Exception {
        ReportFile.Kept kept = new ReportFile.Kept();
        ReportFile r = ReportFile.read(leaky(), kept);
        assertEquals(4242, r.pid());
        assertEquals("gpu-01", r.host());
        assertEquals(Instant.ofEpochMilli(TestReports.T0 + 10_000), r.writtenAt());
        assertEquals(2, kept.leaks.size());
        assertEquals(Kind.COMM, kept.leaks.get(0).kind());
        assertEquals(1, kept.leaks.get(0).rank());
        assertEquals("00000000000000aa", kept.leaks.get(0).commId());
        assertEquals("com.example.Trainer.init(Trainer.java:42)", kept.leaks.get(0).topFrame());
        assertEquals(2, kept.communicators.size());
        ReportFile.CommEntry released = kept.communicators.get(0);
        assertFalse(released.leaked());
        assertEquals("ncclCommDestroy", released.releasedBy());
        assertEquals(Instant.ofEpochMilli(TestReports.T0 + 900), released.releasedAt());
        assertTrue(kept.communicators.get(1).leaked());
        assertTrue(r.hasLeaks());
        assertTrue(r.communicatorsListed());
    }

    @Test
    void reportWithoutTheAdditionsOfDocsSpecStillReads() throws Exception {
        String text = Files.readString(leaky());
        String old = text.substring(0, text.indexOf(",\n  \"suppressed\"")) + "\n}\n";
        old = old.replace(",\n    \"suppressed\": 0,\n    \"leakedDevComms\": 0,\n    \"leakedMemory\": 0", "");
        assertFalse(old.contains("leakedMemory"), old);
        ReportFile.Kept kept = new ReportFile.Kept();
        ReportFile r = ReportFile.read(Files.writeString(dir.resolve("old.json"), old), kept);
        assertFalse(r.communicatorsListed());
        assertEquals(2, kept.leaks.size());
    }

    @Test
    void deviceCommunicatorsAndMemoryAreLeaksCountedByTheirSummaryFields() throws Exception {
        String text = Files.readString(leaky());
        String withMemory = text.replace("\"leakedMemory\": 0", "\"leakedMemory\": 1")
                .replace("\"kind\": \"event\"", "\"kind\": \"memory\"").replace("\"pendingEvents\": 1", "\"pendingEvents\": 0");
        ReportFile.Kept kept = new ReportFile.Kept();
        ReportFile r = ReportFile.read(Files.writeString(dir.resolve("memory.json"), withMemory), kept);
        assertEquals(1, r.summary().leakedMemory());
        assertEquals(Kind.MEMORY, kept.leaks.get(1).kind());
        assertTrue(r.hasLeaks());
        assertEquals("summary.leakedMemory is 0 but leaks lists 1 of kind memory",
                bad(withMemory.replace("\"leakedMemory\": 1", "\"leakedMemory\": 0")));
    }

    @Test
    void truncatedReportIsNamedSo() throws Exception {
        String text = Files.readString(leaky());
        String message = bad(text.substring(0, text.length() / 2));
        assertTrue(message.startsWith("truncated or malformed JSON: unexpected end of input"), message);
    }

    @Test
    void otherSchemaIsNotAReport() throws Exception {
        assertEquals("not an ncclguard report: schema is \"other/2\", expected \"ncclguard-report/1\"",
                bad(Files.readString(leaky()).replace("ncclguard-report/1", "other/2")));
    }

    @Test
    void missingOrMistypedFieldIsNamedByItsPlace() throws Exception {
        String text = Files.readString(leaky());
        assertEquals("missing field leaks[0].bridge", bad(text.replaceFirst("\"bridge\": \"jna-interface\",", "")));
        assertEquals("pid is not a whole number of 0 or more", bad(text.replace("\"pid\": 4242", "\"pid\": \"4242\"")));
        assertEquals("leaks[1].kind is \"handle\", expected comm, event, stream, devcomm or memory",
                bad(text.replace("\"kind\": \"event\"", "\"kind\": \"handle\"")));
        assertEquals("writtenAt is not an ISO-8601 time: \"yesterday\"",
                bad(text.replaceFirst("\"writtenAt\": \"[^\"]+\"", "\"writtenAt\": \"yesterday\"")));
        assertEquals("missing field summary.cleaned", bad(text.replaceFirst("\"cleaned\": 0,", "")));
    }

    @Test
    void summaryThatDisagreesWithTheLeaksIsMalformed() throws Exception {
        assertEquals("summary.leakedComms is 3 but leaks lists 1 of kind comm",
                bad(Files.readString(leaky()).replace("\"leakedComms\": 1", "\"leakedComms\": 3")));
    }

    @Test
    void jsonThatIsNotAnObjectOrNotJsonIsNamed() throws Exception {
        assertEquals("the report is not a JSON object", bad("[]"));
        assertTrue(bad("SUMMARY: ncclguard: no leaks").startsWith("malformed JSON: unexpected 'S'"));
        assertTrue(bad("").startsWith("truncated or malformed JSON: empty file at line 1, column 1"), bad(""));
        assertEquals("cannot read: no such file", assertThrows(ReportFile.BadReportException.class,
                () -> ReportFile.read(dir.resolve("none.json"), ReportFile.NONE)).getMessage());
    }

    @Test
    void invalidUtf8DeepInAReportIsNamedAtItsLineAndColumn() throws Exception {
        String text = Files.readString(leaky());
        int at = text.indexOf("rank-1");
        long line = text.substring(0, at).lines().count();
        long column = at - text.lastIndexOf('\n', at - 1);
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        bytes.write(text.substring(0, at).getBytes(StandardCharsets.UTF_8));
        bytes.write(new byte[] {(byte) 0xC3, (byte) 0x28}); // a lead byte whose continuation is missing
        bytes.write(text.substring(at).getBytes(StandardCharsets.UTF_8));
        String message = bad(bytes.toByteArray());
        assertEquals("malformed JSON: not UTF-8 text: byte 0x28 cannot be here at line " + line + ", column "
                + (column + 1), message);
    }

    @Test
    void columnsCountCharactersNotBytes() throws Exception {
        assertEquals("malformed JSON: unexpected 'x' where ',' or '}' was expected at line 2, column 11",
                bad("{\"note\":\n  \"\u00e9\u65e5\ud83d\ude00\"   x}"));
    }

    @Test
    void overlongAndSurrogateEncodingsAreNotUtf8() throws Exception {
        String overlong = bad(new byte[] {'{', '"', (byte) 0xE0, (byte) 0x80, (byte) 0xAF, '"'});
        assertTrue(overlong.startsWith("malformed JSON: not UTF-8 text: an encoding of U+002F that UTF-8 does not"
                + " allow at line 1, column 3"), overlong);
        String surrogate = bad(new byte[] {'{', '"', (byte) 0xED, (byte) 0xA0, (byte) 0x80, '"'});
        assertTrue(surrogate.contains("U+D800"), surrogate);
    }

    @Test
    void duplicateKeysTrailingCommasAndTextAfterTheValueAreMalformed() throws Exception {
        assertTrue(bad("{\"a\": 1, \"a\": 2}").startsWith("malformed JSON: duplicate key \"a\" at line 1, column 10"));
        assertTrue(bad("{\"a\": [1,]}").startsWith("malformed JSON: unexpected ']' where a value was expected"));
        assertTrue(bad("{} {}").startsWith("malformed JSON: unexpected '{' after the end of the JSON value"));
    }
}
