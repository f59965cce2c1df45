package dev.ncclguard.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SuppressOptionTest {
    @TempDir
    Path dir;

    @Test
    void suppressDefaultsToNone() {
        assertTrue(Options.parse(null, Map.of(), Map.of()).suppressions().isEmpty());
    }

    @Test
    void suppressReadsItsFileFromTheEnvironmentToo() throws Exception {
        Path file = Files.writeString(dir.resolve("ok.supp"), "leak:Warmup\n");
        Options o = Options.parse(null, Map.of(), Map.of("NCCLGUARD_SUPPRESS", file.toString()));
        assertEquals(1, o.suppressions().rules().size());
    }

    @Test
    void missingSuppressionFileFailsWithTheOptionsOneLine() {
        Path missing = dir.resolve("missing.supp");
        OptionsException e = assertThrows(OptionsException.class,
                () -> Options.parse("suppress=" + missing, Map.of(), Map.of()));
        assertEquals("ncclguard: invalid value '" + missing + "' for option suppress: expected none or a readable "
                + "file of KIND:PATTERN lines", e.getMessage());
    }

    @Test
    void badLineInTheFileFailsWithItsLineNumber() throws Exception {
        Path bad = Files.writeString(dir.resolve("bad.supp"), "Rank.initCommunicator\n");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Options.parse("suppress=" + bad, Map.of(), Map.of()));
        assertTrue(e.getMessage().startsWith("ncclguard: invalid suppression file '" + bad
                + "' for option suppress: line 1: expected KIND:PATTERN"), e.getMessage());
        assertEquals(Suppressions.class, Options.parse(null, Map.of(), Map.of()).suppressions().getClass());
    }
}
