package dev.ncclguard.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ncclguard.catalog.Kind;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SuppressionsTest {
    private static final List<String> STACK = List.of(
            "dev.ncclguard.samples.Rank.initCommunicator(Rank.java:95)",
            "dev.ncclguard.samples.Scenarios.leaky(Scenarios.java:60)",
            "java.lang.Thread.run(Thread.java:840)");

    @TempDir
    Path dir;

    private static Suppressions of(String... lines) {
        return Suppressions.of("test", Suppressions.parse(List.of(lines)));
    }

    @Test
    void patternMatchesAnywhereInAFrameOfTheCreatingStack() {
        Suppressions s = of("comm:Rank.initCommunicator");
        assertEquals("comm:Rank.initCommunicator", s.match(Kind.COMM, STACK).text());
    }

    @Test
    void kindMustMatchUnlessTheRuleSaysLeak() {
        assertNull(of("event:Rank.initCommunicator").match(Kind.COMM, STACK));
        assertNotNull(of("leak:Rank.initCommunicator").match(Kind.COMM, STACK));
        assertNotNull(of("leak:Rank.initCommunicator").match(Kind.STREAM, STACK));
    }

    @Test
    void starMatchesAnyRunAndCaretAndDollarAnchor() {
        assertNotNull(of("comm:samples.*.leaky").match(Kind.COMM, STACK));
        assertNotNull(of("comm:^dev.ncclguard.samples.Rank").match(Kind.COMM, STACK));
        assertNull(of("comm:^ncclguard.samples.Rank").match(Kind.COMM, STACK));
        assertNotNull(of("comm:(Thread.java:840)$").match(Kind.COMM, STACK));
        assertNull(of("comm:Thread.run$").match(Kind.COMM, STACK));
        assertNotNull(of("comm:^*Thread*$").match(Kind.COMM, STACK));
    }

    @Test
    void noStackMatchesNothing() {
        assertNull(of("leak:*").match(Kind.COMM, List.of()));
    }

    @Test
    void commentsAndBlankLinesAreSkippedAndTheFirstMatchingRuleWins() {
        Suppressions s = of("# known leaks", "", "  stream:nothing  ", "comm:leaky", "leak:Rank");
        assertEquals(3, s.rules().size());
        assertEquals(4, s.match(Kind.COMM, STACK).line());
    }

    @Test
    void badLinesNameTheirNumberAndFault() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Suppressions.parse(List.of("# x", "Rank.initCommunicator")));
        assertEquals("line 2: expected KIND:PATTERN (KIND comm, event, stream, devcomm, memory or leak), got 'Rank.initCommunicator'",
                e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> Suppressions.parse(List.of("handle:x")));
        assertEquals("line 1: unknown kind 'handle' (expected comm, event, stream, devcomm, memory, leak or library)", e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> Suppressions.parse(List.of("comm:  ")));
        assertEquals("line 1: empty pattern", e.getMessage());
    }

    @Test
    void optionReadsTheFileAtOnce() throws Exception {
        Path file = Files.writeString(dir.resolve("known.supp"), "comm:Rank.initCommunicator\n");
        Suppressions s = Suppressions.option(file.toString());
        assertEquals(1, s.rules().size());
        assertEquals(file.toString(), s.toString());
        assertSame(Suppressions.NONE, Suppressions.option("none"));
        assertTrue(Suppressions.NONE.isEmpty());
    }

    @Test
    void optionAnswersNullForAMissingFileAndOneLineForADirectoryOrABadOne() throws Exception {
        assertNull(Suppressions.option(dir.resolve("missing.supp").toString()));
        assertEquals("ncclguard: invalid suppression file '" + dir + "' for option suppress: it is a directory, not a"
                + " file", assertThrows(IllegalArgumentException.class, () -> Suppressions.option(dir.toString()))
                .getMessage());
        Path bad = Files.writeString(dir.resolve("bad.supp"), "comm:ok\nthread:main\n");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Suppressions.option(bad.toString()));
        assertEquals("ncclguard: invalid suppression file '" + bad + "' for option suppress: line 2: unknown kind "
                + "'thread' (expected comm, event, stream, devcomm, memory, leak or library)", e.getMessage());
        assertFalse(e.getMessage().contains("\n"));
    }

    @Test
    void libraryLinesNameCallingLibrariesForTheNativePartAndNoLeakRule() throws Exception {
        Path file = Files.writeString(dir.resolve("libs.supp"), "# pooled events of a vendor library\n"
                + "library:libvendor_pool.so\nLIBRARY: libother\ncomm:Warmup.init\n");
        Suppressions s = Suppressions.option(file.toString());
        assertEquals(java.util.List.of("libvendor_pool.so", "libother"), s.libraries());
        assertEquals(1, s.rules().size());
    }

    @Test
    void aLibraryLineWithoutANameIsRefused() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Suppressions.parse(java.util.List.of("library:")));
        assertEquals("line 1: empty library name", e.getMessage());
    }
}
