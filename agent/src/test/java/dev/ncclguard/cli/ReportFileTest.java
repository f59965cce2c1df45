package dev.ncclguard.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

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
        Path file = Files.writeString(dir.resolve("bad.json"), json);
        return assertThrows(ReportFile.BadReportException.class, () -> ReportFile.read(file)).getMessage();
    }

    @Test
    void readsWhatTheAgentWrites() throws Exception {
        ReportFile r = ReportFile.read(leaky());
        assertEquals(4242, r.pid());
        assertEquals("gpu-01", r.host());
        assertEquals(Instant.ofEpochMilli(TestReports.T0 + 10_000), r.writtenAt());
        assertEquals(2, r.leaks().size());
        assertEquals("comm", r.leaks().get(0).kind());
        assertEquals(1, r.leaks().get(0).rank());
        assertEquals("00000000000000aa", r.leaks().get(0).commId());
        assertEquals("com.example.Trainer.init(Trainer.java:42)", r.leaks().get(0).topFrame());
        assertEquals(2, r.communicators().size());
        ReportFile.CommEntry released = r.communicators().get(0);
        assertFalse(released.leaked());
        assertEquals("ncclCommDestroy", released.releasedBy());
        assertEquals(Instant.ofEpochMilli(TestReports.T0 + 900), released.releasedAt());
        assertTrue(r.communicators().get(1).leaked());
        assertTrue(r.hasLeaks());
    }

    @Test
    void reportWithoutTheAdditionsOfDocsSpecStillReads() throws Exception {
        String text = Files.readString(leaky());
        String old = text.substring(0, text.indexOf(",\n  \"suppressed\"")) + "\n}\n";
        old = old.replace(",\n    \"suppressed\": 0", "");
        ReportFile r = ReportFile.read(Files.writeString(dir.resolve("old.json"), old));
        assertNull(r.communicators());
        assertEquals(2, r.leaks().size());
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
        assertEquals("leaks[1].kind is \"handle\", expected comm, event or stream",
                bad(text.replace("\"kind\": \"event\"", "\"kind\": \"handle\"")));
        assertEquals("writtenAt is not an ISO-8601 time: \"yesterday\"",
                bad(text.replaceFirst("\"writtenAt\": \"[^\"]+\"", "\"writtenAt\": \"yesterday\"")));
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
        assertEquals("cannot read: no such file",
                assertThrows(ReportFile.BadReportException.class, () -> ReportFile.read(dir.resolve("none.json")))
                        .getMessage());
    }
}
