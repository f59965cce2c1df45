package dev.ncclguard.report;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ncclguard.catalog.Kind;
import dev.ncclguard.cleanup.LeakOutcome;
import dev.ncclguard.cleanup.Outcome;
import dev.ncclguard.config.Suppressions;
import dev.ncclguard.track.HandleView;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class TextReportWriterTest {
    private final HandleView comm1 = Views.comm(0x10, 0, 2, 0, "9f3c1a",
            Views.stack("com.example.Train.setup", "com.example.Train.main"));
    private final HandleView comm2 = Views.comm(0x11, 1, 2, 1, "9f3c1a", null);
    private final HandleView event = Views.event(0x20, 0x99, Views.stack("com.example.Train.step"));
    private final HandleView stream = Views.stream(0x30, 4, null);

    private static List<String> summaryLines(String text) {
        return text.lines().filter(line -> line.startsWith("SUMMARY: ncclguard:")).toList();
    }

    private Report leaky(String action, Map<HandleView, LeakOutcome> cleanup) {
        return Report.builder().action(action).pid(4242).host("gpu-01").communicators(2, 0)
                .leaks(List.of(comm1, comm2, event, stream)).stillPending(Map.of(event, true, stream, false))
                .cleanup(cleanup).build();
    }

    @Test
    void leakyRunSaysWhatLeakedWhereAndWhatToDo() {
        String text = TextReportWriter.toText(leaky("report", Map.of()));

        assertTrue(text.startsWith("ncclguard: 4 leaked handles at exit (pid 4242 on gpu-01, action=report)\n"), text);
        assertTrue(text.contains("Leaked communicator 0x10 (rank 0 of 2, device 0, commId 9f3c1a): created by"
                + " ncclCommInitRank, never destroyed or aborted\n"
                + "  Created on thread \"main\" at " + java.time.Instant.ofEpochMilli(Views.T0 + 0x10)
                + " through jna-interface:\n"
                + "    at com.example.Train.setup(Train.java:10)\n"
                + "    at com.example.Train.main(Train.java:11)\n"
                + "  What to do: destroy it with ncclCommDestroy before exit, or ncclCommAbort on error paths.\n"), text);
        assertTrue(text.contains("Pending event 0x20 (device 0, recorded on stream 0x99): created by cudaEventCreate,"
                + " recorded and never seen complete; still pending at exit\n"), text);
        assertTrue(text.contains("  What to do: synchronize it (cudaEventSynchronize) before exit.\n"), text);
        assertTrue(text.contains("Unsynchronized stream 0x30 (device 1, 4 pending operations): created by"
                + " cudaStreamCreateWithFlags, work enqueued after its last synchronization; its work had completed"
                + " by exit\n"), text);
        assertTrue(text.contains("  What to do: cudaStreamSynchronize it before exit.\n"), text);
        assertTrue(text.contains("    (no stack recorded; run with stacks=on to see where it was created)\n"), text);
        assertFalse(text.contains("Cleanup:"), text);
    }

    @Test
    void leakyRunEndsInExactlyOneSummaryLine() {
        String text = TextReportWriter.toText(leaky("report", Map.of()));

        List<String> lines = text.lines().toList();
        assertEquals(List.of("SUMMARY: ncclguard: 2 leaked communicators, 1 pending event, 1 unsynchronized stream"),
                summaryLines(text));
        assertEquals(summaryLines(text).get(0), lines.get(lines.size() - 1));
    }

    @Test
    void cleanupRunSaysWhatCleanupDidAndCountsIt() {
        String text = TextReportWriter.toText(leaky("cleanup", Map.of(
                comm1, new LeakOutcome(Outcome.DESTROYED, null),
                comm2, new LeakOutcome(Outcome.ABORTED, "ncclCommDestroy did not return within 2500 ms"),
                event, new LeakOutcome(Outcome.SYNCHRONIZED, null),
                stream, new LeakOutcome(Outcome.TIMED_OUT, "still pending after 5000 ms"))));

        assertTrue(text.contains("  Cleanup: destroyed with ncclCommDestroy.\n"), text);
        assertTrue(text.contains("  Cleanup: aborted with ncclCommAbort: ncclCommDestroy did not return within 2500 ms.\n"),
                text);
        assertTrue(text.contains("  Cleanup: synchronized (its work completed while cleanup waited), then destroyed"
                + " with cudaEventDestroy.\n"), text);
        assertTrue(text.contains("  Cleanup: timed-out: still pending after 5000 ms.\n"), text);
        assertEquals(List.of("SUMMARY: ncclguard: 2 leaked communicators, 1 pending event, 1 unsynchronized stream"
                + " (cleaned 3, failed 1)"), summaryLines(text));
    }

    @Test
    void everyCleanupLineStartsWithTheReportsCleanupWord() {
        for (Outcome outcome : Outcome.values()) {
            for (Kind kind : Kind.values()) {
                String text = TextReportWriter.toText(Report.builder().action("cleanup").communicators(1, 0)
                        .leaks(List.of(kind == Kind.COMM ? comm1 : kind == Kind.EVENT ? event : stream))
                        .cleanup(Map.of(kind == Kind.COMM ? comm1 : kind == Kind.EVENT ? event : stream,
                                new LeakOutcome(outcome, null))).build());
                assertTrue(text.contains("  Cleanup: " + outcome.word()), outcome + " " + kind + ":\n" + text);
            }
        }
    }

    // --- text=log ---

    @Test
    void logBlocksStartLikeNettysLeakLinesWithTheLinkToTheirKindsDocs() {
        List<dev.ncclguard.log.Log.Entry> entries = TextReportWriter.logEntries(leaky("report", Map.of()));

        assertEquals("LEAK: ncclCommDestroy or ncclCommAbort was not called before the JVM exited: communicator 0x10"
                + " (rank 0 of 2, device 0, commId 9f3c1a), created by ncclCommInitRank. See"
                + " https://ncclguard.dev/docs/leaks.md#leaked-communicator for more information.\n"
                + "Created on thread \"main\" at " + java.time.Instant.ofEpochMilli(Views.T0 + 0x10)
                + " through jna-interface:\n"
                + "\tat com.example.Train.setup(Train.java:10)\n"
                + "\tat com.example.Train.main(Train.java:11)\n"
                + "What to do: destroy it with ncclCommDestroy before exit, or ncclCommAbort on error paths.",
                entries.get(0).message());
        assertTrue(entries.get(2).message().startsWith("LEAK: the last record of an event was never seen complete"),
                entries.get(2).message());
        assertTrue(entries.get(2).message().contains(", still pending at exit, created by cudaEventCreate. See"
                + " https://ncclguard.dev/docs/leaks.md#pending-event for more information.\n"), entries.get(2).message());
        assertTrue(entries.get(3).message().contains("#unsynchronized-stream for more"), entries.get(3).message());
    }

    @Test
    void logBlocksGoToTheirKindsLoggerAtWarnAndTheSummaryLast() {
        List<dev.ncclguard.log.Log.Entry> entries = TextReportWriter.logEntries(leaky("report", Map.of()));

        assertEquals(List.of("dev.ncclguard.leak.communicator", "dev.ncclguard.leak.communicator",
                "dev.ncclguard.leak.event", "dev.ncclguard.leak.stream", "dev.ncclguard.leak"),
                entries.stream().map(dev.ncclguard.log.Log.Entry::logger).toList());
        assertTrue(entries.stream().allMatch(dev.ncclguard.log.Log.Entry::warn));
        assertEquals("SUMMARY: ncclguard: 2 leaked communicators, 1 pending event, 1 unsynchronized stream",
                entries.get(entries.size() - 1).message());
    }

    @Test
    void logSaysWhatCleanupDidUnderTheCleanupLoggerWarnWhenItFailed() {
        List<dev.ncclguard.log.Log.Entry> entries = TextReportWriter.logEntries(leaky("cleanup", Map.of(
                comm1, new LeakOutcome(Outcome.DESTROYED, null),
                comm2, new LeakOutcome(Outcome.ABORTED, "ncclCommDestroy did not return within 2500 ms"),
                event, new LeakOutcome(Outcome.SYNCHRONIZED, null),
                stream, new LeakOutcome(Outcome.TIMED_OUT, "still pending after 5000 ms"))));

        List<dev.ncclguard.log.Log.Entry> cleanup = entries.stream()
                .filter(e -> e.logger().equals(TextReportWriter.CLEANUP_LOGGER)).toList();
        assertEquals(List.of("leaked communicator 0x10: destroyed with ncclCommDestroy.",
                "leaked communicator 0x11: aborted with ncclCommAbort: ncclCommDestroy did not return within 2500 ms.",
                "pending event 0x20: synchronized (its work completed while cleanup waited), then destroyed with"
                        + " cudaEventDestroy.",
                "unsynchronized stream 0x30: timed-out: still pending after 5000 ms."),
                cleanup.stream().map(dev.ncclguard.log.Log.Entry::message).toList());
        assertEquals(List.of(false, false, false, true), cleanup.stream().map(dev.ncclguard.log.Log.Entry::warn).toList());
    }

    @Test
    void aCleanRunLogsItsSummaryAtInfo() {
        List<dev.ncclguard.log.Log.Entry> entries = TextReportWriter.logEntries(Report.builder().communicators(2, 2).build());

        assertEquals(List.of(new dev.ncclguard.log.Log.Entry("dev.ncclguard.leak", false,
                "SUMMARY: ncclguard: no leaks (2 communicators created, 2 released)")), entries);
    }

    @Test
    void everyKindsLinkNamesAHeadingOfTheLeaksDocsPage() throws Exception {
        java.nio.file.Path page = java.nio.file.Path.of("..", "docs", "leaks.md");
        List<String> anchors = java.nio.file.Files.readAllLines(page).stream().filter(l -> l.startsWith("## "))
                .map(l -> l.substring(3).strip().toLowerCase(java.util.Locale.ROOT).replace(' ', '-')).toList();
        for (Kind kind : Kind.values()) {
            String link = TextReportWriter.docsLink(kind);
            assertTrue(link.startsWith(TextReportWriter.DOCS + "#"), link);
            assertTrue(anchors.contains(link.substring(link.indexOf('#') + 1)), link + " not among " + anchors);
        }
    }

    @Test
    void cleanRunIsOneSummaryLine() {
        String text = TextReportWriter.toText(Report.builder().communicators(2, 2).build());

        assertEquals("SUMMARY: ncclguard: no leaks (2 communicators created, 2 released)\n", text);
    }

    @Test
    void countsAreSingularForOne() {
        assertEquals("SUMMARY: ncclguard: no leaks (1 communicator created, 1 released)\n",
                TextReportWriter.toText(Report.builder().communicators(1, 1).build()));
        assertEquals(List.of("SUMMARY: ncclguard: 1 leaked communicator"),
                summaryLines(TextReportWriter.toText(Report.builder().leaks(List.of(comm1)).build())));
    }

    @Test
    void aThreadNameWithLineBreaksCannotForgeASummaryLine() {
        String evil = "t\nSUMMARY: ncclguard: no leaks (0 communicators created, 0 released)\r\u0000";
        HandleView view = new HandleView(Kind.EVENT, 0x20, "cudaEventCreate", "jni", evil, Views.T0,
                Views.stack("com.example.Evil.run"), 0, Map.of(), null);

        String text = TextReportWriter.toText(Report.builder().leaks(List.of(view)).build());

        assertEquals(List.of("SUMMARY: ncclguard: 1 pending event"), summaryLines(text));
        assertTrue(text.contains("thread \"t\\nSUMMARY: ncclguard: no leaks (0 communicators created, 0 released)"
                + "\\r\\u0000\""), text);
    }

    private static List<HandleView> events(int n, long firstHandle, Throwable creation) {
        List<HandleView> events = new java.util.ArrayList<>();
        for (int i = 0; i < n; i++) {
            events.add(Views.event(firstHandle + i, 0x99, creation));
        }
        return events;
    }

    private static long count(String text, String part) {
        return text.lines().filter(line -> line.startsWith(part)).count();
    }

    @Test
    void leaksAlikeAreOneBlockTheFirstInFullThenAFewByHandleThenACount() {
        Throwable step = Views.stack("com.example.Train.step", "com.example.Train.main");

        String text = TextReportWriter.toText(Report.builder().leaks(events(1_000, 0x1000, step)).build());

        assertTrue(text.startsWith("ncclguard: 1000 leaked handles at exit"), text);
        assertEquals(1, count(text, "Pending event 0x"), text);
        assertEquals(1, count(text, "    at com.example.Train.step(Train.java:10)"), text);
        assertTrue(text.contains("Pending event 0x1000 (device 0, recorded on stream 0x99): created by cudaEventCreate,"
                + " recorded and never seen complete\n"), text);
        assertTrue(text.contains("  What to do: synchronize it (cudaEventSynchronize) before exit.\n"
                + "  And 999 more pending events like it (same api, creating stack and state):\n"
                + "    0x1001 (device 0, recorded on stream 0x99), thread \"worker-1\" at "
                + java.time.Instant.ofEpochMilli(Views.T0 + 0x1001) + "\n"), text);
        assertEquals(TextReportWriter.MORE_LISTED, count(text, "    0x"), text);
        assertTrue(text.contains("    ... 994 more; the JSON report (option report=) lists every one.\n"), text);
        assertEquals(List.of("SUMMARY: ncclguard: 1000 pending events"), summaryLines(text));
    }

    @Test
    void leaksOfAnotherStackOrStateAreBlocksOfTheirOwn() {
        List<HandleView> leaks = new java.util.ArrayList<>(events(3, 0x1000, Views.stack("com.example.Train.step")));
        leaks.addAll(events(2, 0x2000, Views.stack("com.example.Train.eval")));
        leaks.addAll(events(2, 0x3000, Views.stack("com.example.Train.step")));
        Map<HandleView, Boolean> pending = new java.util.HashMap<>();
        leaks.subList(5, 7).forEach(v -> pending.put(v, true));

        String text = TextReportWriter.toText(Report.builder().leaks(leaks).stillPending(pending).build());

        assertEquals(3, count(text, "Pending event 0x"), text);
        assertTrue(text.contains("  And 2 more pending events like it"), text);
        assertTrue(text.contains("Pending event 0x2000 (device 0, recorded on stream 0x99): created by cudaEventCreate,"
                + " recorded and never seen complete\n"), text);
        assertTrue(text.contains("  And 1 more pending event like it (same api, creating stack and state):\n"
                + "    0x2001 "), text);
        assertTrue(text.contains("Pending event 0x3000 (device 0, recorded on stream 0x99): created by cudaEventCreate,"
                + " recorded and never seen complete; still pending at exit\n"), text);
        assertFalse(text.contains("... "), text);
    }

    @Test
    void blocksBeyondTheMostPrintedAreCountedInOneLine() {
        List<HandleView> leaks = new java.util.ArrayList<>();
        int places = TextReportWriter.MAX_GROUPS + 10;
        for (int i = 0; i < places; i++) {
            leaks.addAll(events(2, 0x10_000 * (i + 1), Views.stack("com.example.Train.step" + i)));
        }

        String text = TextReportWriter.toText(Report.builder().leaks(leaks).build());

        assertEquals(TextReportWriter.MAX_GROUPS, count(text, "Pending event 0x"), text);
        assertTrue(text.contains("\nncclguard: 20 more leaked handles created at 10 other places or in other states,"
                + " not shown; the JSON report (option report=) lists every one.\n"), text);
        assertEquals(List.of("SUMMARY: ncclguard: " + 2 * places + " pending events"), summaryLines(text));
    }

    @Test
    void suppressedLeaksAlikeAreOneLineWithACount() {
        Throwable warmup = Views.stack("com.example.Warmup.init");
        List<HandleView> leaks = new java.util.ArrayList<>(events(500, 0x1000, warmup));
        leaks.add(comm1);

        String text = TextReportWriter.toText(Report.builder().leaks(leaks)
                .suppressions(Suppressions.of("test", Suppressions.parse(List.of("event:Warmup.init")))).build());

        assertTrue(text.contains("Suppressed (listed, not counted):\n  Pending event 0x1000 (device 0, recorded on stream"
                + " 0x99) at com.example.Warmup.init(Warmup.java:10): suppressed by 'event:Warmup.init', and 499 more"
                + " like it\n\n"), text);
        assertEquals(List.of("SUMMARY: ncclguard: 1 leaked communicator (500 suppressed)"), summaryLines(text));
    }
}
