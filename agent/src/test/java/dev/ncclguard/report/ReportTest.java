package dev.ncclguard.report;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.ncclguard.catalog.Kind;
import dev.ncclguard.cleanup.LeakOutcome;
import dev.ncclguard.cleanup.Outcome;
import dev.ncclguard.json.ReportSchema;
import dev.ncclguard.track.HandleView;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.jar.Attributes;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ReportTest {
    private final HandleView comm = Views.comm(0x10, 0, 2, 0, "9f3c", Views.stack("com.example.Train.setup"));
    private final HandleView event = Views.event(0x20, 0x99, null);
    private final HandleView stream = Views.stream(0x30, 4, null);

    @Test
    void summaryCountsLeaksByKindAndCleanupOutcomes() {
        HandleView comm2 = Views.comm(0x11, 1, 2, 1, "9f3c", null);
        Report report = Report.builder().action("cleanup").communicators(5, 3)
                .leaks(List.of(comm, comm2, event, stream))
                .cleanup(Map.of(comm, new LeakOutcome(Outcome.DESTROYED, null),
                        comm2, new LeakOutcome(Outcome.TIMED_OUT, "ncclCommAbort did not return"),
                        event, new LeakOutcome(Outcome.SYNCHRONIZED, null),
                        stream, new LeakOutcome(Outcome.FAILED, "cudaStreamQuery returned 700")))
                .build();

        assertEquals(new ReportSchema.Summary(5, 3, 2, 1, 1, 2, 2, 0), report.summary());
    }

    @Test
    void leaksAreOrderedCommunicatorsEventsStreamsThenByCreationTime() {
        HandleView olderStream = Views.stream(0x03, 1, null);
        Report report = Report.builder().leaks(List.of(stream, event, olderStream, comm)).build();

        assertEquals(List.of("0x10", "0x20", "0x3", "0x30"), report.leaks().stream().map(Leak::handle).toList());
    }

    @Test
    void leaksNearlyInOrderOrShuffledAreSortedStablyLikeAComparatorSort() {
        java.util.Random random = new java.util.Random(11);
        for (int swaps : new int[] {0, 3, 50, 100_000}) {
            List<HandleView> views = new java.util.ArrayList<>();
            for (int i = 0; i < 3_000; i++) {
                Kind kind = Kind.values()[i * 3 / 3_000];
                // runs of equal times keep their order: the sort must be stable
                views.add(new HandleView(kind, i, "api", "b", "t", Views.T0 + i / 4, null, 0, Map.of(), null));
            }
            for (int i = 0; i < swaps; i++) {
                java.util.Collections.swap(views, random.nextInt(views.size()), random.nextInt(views.size()));
            }
            List<HandleView> expected = new java.util.ArrayList<>(views);
            expected.sort(java.util.Comparator.comparing(HandleView::kind).thenComparingLong(HandleView::createdAtMillis));

            assertEquals(expected, Report.Builder.sortNearlyOrdered(views), swaps + " swaps");
        }
    }

    @Test
    void leaksMadeAtOnePlaceShareOneFormattedStack() {
        HandleView a = Views.event(0x21, 0x99, Views.stack("com.example.Train.step", "com.example.Train.main"));
        HandleView b = Views.event(0x22, 0x99, Views.stack("com.example.Train.step", "com.example.Train.main"));
        HandleView c = Views.event(0x23, 0x99, Views.stack("com.example.Train.eval", "com.example.Train.main"));
        List<Leak> leaks = Report.builder().leaks(List.of(a, b, c)).build().leaks();

        assertSame(leaks.get(0).stack(), leaks.get(1).stack());
        assertEquals(List.of("com.example.Train.eval(Train.java:10)", "com.example.Train.main(Train.java:11)"),
                leaks.get(2).stack());
    }

    @Test
    void leakCarriesItsCreationFormattedAndDetailsInOrder() {
        Report report = Report.builder().leaks(List.of(comm)).build();
        Leak leak = report.leaks().get(0);

        assertEquals(Kind.COMM, leak.kind());
        assertEquals("0x10", leak.handle());
        assertEquals("ncclCommInitRank", leak.api());
        assertEquals("jna-interface", leak.bridge());
        assertEquals("main", leak.thread());
        assertEquals(Instant.ofEpochMilli(Views.T0 + 0x10), leak.createdAt());
        assertEquals(List.of("com.example.Train.setup(Train.java:10)"), leak.stack());
        assertEquals(List.of("rank", "nranks", "device", "commId"), List.copyOf(leak.details().keySet()));
    }

    @Test
    void stillPendingIsAddedForEventsAndStreamsOnlyWhenTheProbeKnows() {
        HandleView unknown = Views.event(0x21, 0x99, null);
        Report report = Report.builder().leaks(List.of(comm, event, unknown, stream))
                .stillPending(Map.of(comm, true, event, true, stream, false)).build();

        assertFalse(report.leaks().get(0).details().containsKey("stillPending"));
        assertEquals(true, report.leaks().get(1).details().get("stillPending"));
        assertFalse(report.leaks().get(2).details().containsKey("stillPending"));
        assertEquals(false, report.leaks().get(3).details().get("stillPending"));
    }

    @Test
    void actionReportSaysNoneWhateverCleanupMapIsGiven() {
        Report report = Report.builder().action("report").leaks(List.of(comm))
                .cleanup(Map.of(comm, new LeakOutcome(Outcome.FAILED, "x"))).build();

        assertEquals(Outcome.NONE, report.leaks().get(0).cleanup());
        assertNull(report.leaks().get(0).cleanupNote());
        assertEquals(0, report.summary().cleanupFailed());
    }

    @Test
    void cleanupThatLeftAHandleToTheApplicationSaysSo() {
        Report report = Report.builder().action("cleanup").leaks(List.of(comm))
                .cleanup(Map.of(comm, new LeakOutcome(Outcome.NONE, "released by the application"))).build();

        assertEquals(Outcome.NONE, report.leaks().get(0).cleanup());
        assertEquals("released by the application", report.leaks().get(0).cleanupNote());
    }

    @Test
    void processAndAgentFieldsAreFilledIn() {
        Instant started = Instant.parse("2025-06-01T10:00:00Z");
        Report report = Report.builder().startedAt(started).build();

        assertEquals(Report.SCHEMA, report.schema());
        assertEquals(ProcessHandle.current().pid(), report.pid());
        assertEquals(HostName.get(), report.host());
        assertEquals(started, report.startedAt());
        assertFalse(report.writtenAt().isBefore(started));
        // Run from target/classes, not from the agent jar: no manifest to read.
        assertEquals("dev", report.agentVersion());
    }

    @Test
    void agentVersionIsReadFromTheJarManifest(@TempDir Path temp) throws IOException {
        Path jar = temp.resolve("ncclguard-agent.jar");
        Manifest manifest = new Manifest();
        manifest.getMainAttributes().put(Attributes.Name.MANIFEST_VERSION, "1.0");
        manifest.getMainAttributes().put(Attributes.Name.IMPLEMENTATION_VERSION, "1.4.2");
        try (OutputStream out = Files.newOutputStream(jar); JarOutputStream unused = new JarOutputStream(out, manifest)) {
            // The manifest is all this jar needs.
        }
        assertEquals("1.4.2", Report.Version.fromJar(jar.toUri().toURL()));
        assertNull(Report.Version.fromJar(temp.toUri().toURL()));
    }

    @Test
    void unknownActionIsRefused() {
        assertThrows(IllegalArgumentException.class, () -> Report.builder().action("off"));
    }
}
