package dev.ncclguard.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.ncclguard.testkit.ChildJvm;
import dev.ncclguard.testkit.Output;
import dev.ncclguard.testkit.ReportJson;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.BiPredicate;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import net.bytebuddy.jar.asm.ClassReader;
import net.bytebuddy.jar.asm.ClassVisitor;
import net.bytebuddy.jar.asm.ClassWriter;
import net.bytebuddy.jar.asm.Label;
import net.bytebuddy.jar.asm.MethodVisitor;
import net.bytebuddy.jar.asm.Opcodes;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The interposer (libncclguard.so, option native): the DeepEP-style runtime of the samples, whose
 * C library makes every NCCL and CUDA call, in a child JVM under the agent against the emulator.
 */
class NativeInterposerIT {
    /** The frame that entered the runtime's C library, first in every Java stack of its handles. */
    static final String OPEN = "dev.ncclguard.samples.ep.EpRuntime.open(Native Method)";
    static final String RUNTIME = "libep_runtime.so";
    static final String JDK25 = "/usr/lib/jvm/temurin-25-jdk-amd64";

    @TempDir
    Path dir;

    @Test
    void whatTheRuntimeLeaksInCIsReportedWithTheJavaFrameThatEnteredIt() throws Exception {
        Path report = dir.resolve("leaky.json");
        Output r = ChildJvm.sample().agent("report=" + report).run("ep-leaky");
        assertEquals(0, r.exitCode(), r.describe());
        JsonNode json = ReportJson.read(report);
        for (String kind : List.of("comm", "stream", "event")) {
            List<JsonNode> leaks = ReportJson.leaks(json, kind);
            assertEquals(2, leaks.size(), kind + " a rank: " + json);
            for (JsonNode leak : leaks) {
                assertEquals("native", leak.path("bridge").asText(), leak.toString());
                assertEquals(RUNTIME, leak.path("callerLibrary").asText(), leak.toString());
                assertEquals("Java_dev_ncclguard_samples_ep_EpRuntime_open", leak.path("callerSymbol").asText());
                assertEquals(OPEN, leak.path("stack").path(0).asText(), leak.toString());
            }
        }
        assertEquals(2, ReportJson.summary(json, "commsCreated"));
        assertEquals(2, ReportJson.summary(json, "pendingEvents"));
        assertEquals(2, ReportJson.summary(json, "unsyncedStreams"));
        assertTrue(r.stderr().contains("through native, called from " + RUNTIME), r.describe());
    }

    /** On 25 the creation's out-parameters are read as on 17 (Unsafe's array offset is a long there). */
    @Test
    void onJdk25TheRuntimesCommunicatorsAreTrackedThroughTheNativeBridge() throws Exception {
        Path report = dir.resolve("jdk25.json");
        Output r = ChildJvm.sample().javaHome("/usr/lib/jvm/temurin-25-jdk-amd64").agent("report=" + report)
                .run("ep-leaky");
        assertEquals(0, r.exitCode(), r.describe());
        assertFalse(r.stderr().contains("tracking failed"), r.describe());
        List<JsonNode> comms = ReportJson.leaks(ReportJson.read(report), "comm");
        assertEquals(2, comms.size(), r.describe());
        for (JsonNode comm : comms) {
            assertEquals("native", comm.path("bridge").asText(), comm.toString());
            assertEquals("ncclCommInitRank", comm.path("api").asText(), comm.toString());
        }
    }

    @Test
    void eventsMadeInOneCallWithoutAnUpcallCarryTheirOwnCallersStack() throws Exception {
        // 2 ranks x 3 iterations x (forward, backward): 100 events a call, the last left; after a
        // stack's first creation the others are made in C alone (its memo per JNI call) and adopted
        Path report = dir.resolve("events.json");
        Output r = ChildJvm.sample().agent("report=" + report).run("ep-events", "--iters", "3");
        assertEquals(0, r.exitCode(), r.describe());
        JsonNode json = ReportJson.read(report);
        List<JsonNode> leaks = ReportJson.leaks(json, "event");
        assertEquals(12, leaks.size(), json.toString());
        int forward = 0;
        int backward = 0;
        for (JsonNode leak : leaks) {
            JsonNode stack = leak.path("stack");
            assertEquals("dev.ncclguard.samples.ep.EpRuntime.timed(Native Method)", stack.path(0).asText(), leak.toString());
            assertTrue(stack.path(1).asText().startsWith("dev.ncclguard.samples.EpSample.timedOps("), leak.toString());
            String caller = stack.path(2).asText();
            forward += caller.startsWith("dev.ncclguard.samples.EpSample.forward(") ? 1 : 0;
            backward += caller.startsWith("dev.ncclguard.samples.EpSample.backward(") ? 1 : 0;
            assertTrue(leak.path("thread").asText().startsWith("rank-"), leak.toString());
        }
        assertEquals(6, forward, json.toString());
        assertEquals(6, backward, json.toString());
    }

    @Test
    void aNewStackNamedFromTheDepotReadsAsTheUpcallsThrowableDoes() throws Exception {
        // ep-stacks: six kinds of frames (a plain call, a lambda, reflection, a method handle, a
        // constructor, 80 frames of recursion) above variant(), each on a thread that made events
        // at forward()'s stack first (the new stack takes no upcall: named from the native depot
        // when its event is adopted) and on a fresh thread (its first creation takes the upcall:
        // the Throwable); the two threads differ only in the lambda that runs them
        // and under -XX:+ShowHiddenFrames, which a Throwable follows: lambda proxies, lambda
        // forms and @Hidden methods kept
        for (String[] run : new String[][] {{System.getProperty("java.home")}, {JDK25},
            {System.getProperty("java.home"), "-XX:+ShowHiddenFrames"}, {JDK25, "-XX:+ShowHiddenFrames"}}) {
            String home = run[0];
            boolean shown = run.length > 1;
            Path report = dir.resolve("stacks-" + Path.of(home).getFileName() + (shown ? "-shown" : "") + ".json");
            ChildJvm jvm = ChildJvm.sample().javaHome(home).env("NCCLGUARD_NATIVE_DEBUG", "1").agent("report=" + report);
            if (shown) {
                jvm.jvmArg("-XX:+UnlockDiagnosticVMOptions").jvmArg(run[1]);
            }
            Output r = jvm.run("ep-stacks", "--ranks", "1", "--iters", "1");
            assertEquals(0, r.exitCode(), r.describe());
            Map<String, List<String>> byThread = new TreeMap<>();
            boolean hiddenSeen = false;
            for (JsonNode leak : ReportJson.leaks(ReportJson.read(report), "event")) {
                String thread = leak.path("thread").asText();
                List<String> frames = new ArrayList<>();
                // the lambda that runs the thread (its method, and its proxy where hidden frames show)
                leak.path("stack").forEach(f -> frames.add(f.asText()
                        .replaceAll("lambda\\$stacks\\$\\d+\\(EpSample\\.java:\\d+\\)", "lambda\\$stacks(the thread's)")
                        .replaceAll("EpSample\\$\\$Lambda[^.(]*\\.run\\(", "EpSample\\$\\$Lambda(the thread's).run(")));
                hiddenSeen |= frames.stream().anyMatch(f -> f.contains("$$Lambda"));
                if (thread.startsWith("stacks-") && frames.stream().noneMatch(f -> f.contains("EpSample.forward("))) {
                    assertNull(byThread.put(thread, frames), r.describe());
                }
            }
            for (int v = 0; v < 6; v++) {
                List<String> named = byThread.get("stacks-" + v + "-after");
                List<String> upcall = byThread.get("stacks-" + v + "-first");
                assertNotNull(named, home + ": variant " + v + ": " + byThread);
                assertEquals(upcall, named, String.join(" ", run) + ": variant " + v);
                assertEquals("dev.ncclguard.samples.ep.EpRuntime.timed(Native Method)", named.get(0), named.toString());
            }
            assertEquals(shown, hiddenSeen, home + " " + String.join(" ", run));
            assertTrue(byThread.get("stacks-1-after").stream().anyMatch(f -> f.contains("EpSample.lambda$variant$")));
            assertTrue(byThread.get("stacks-4-after").stream().anyMatch(f -> f.contains("EpSample$TimedOps.<init>(")));
            assertTrue(byThread.get("stacks-5-after").get(64).startsWith("... "));
            // one creation upcall a thread (the 12 threads, the rank's own): an upcall per new
            // stack would make six more
            Matcher m = Pattern.compile("upcalls \\d+ \\([^)]*cudaEventCreateWithFlags (\\d+)").matcher(r.stderr());
            assertTrue(m.find(), r.describe());
            assertTrue(Integer.parseInt(m.group(1)) <= 13, home + ": " + m.group());
        }
    }

    /** The stacks of the report's leaked events that {@code keep} takes, by thread, in the report's order. */
    private static Map<String, List<List<String>>> eventStacksByThread(Path report,
            BiPredicate<String, List<String>> keep) throws Exception {
        Map<String, List<List<String>>> byThread = new TreeMap<>();
        for (JsonNode leak : ReportJson.leaks(ReportJson.read(report), "event")) {
            String thread = leak.path("thread").asText();
            List<String> frames = new ArrayList<>();
            leak.path("stack").forEach(f -> frames.add(f.asText()));
            if (keep.test(thread, frames)) {
                byThread.computeIfAbsent(thread, t -> new ArrayList<>()).add(frames);
            }
        }
        return byThread;
    }

    /** Shifted's class file (from the samples jar) with every line moved by {@code by}: its bytecode unchanged. */
    private static byte[] shiftedLines(int by) throws Exception {
        byte[] original;
        try (java.util.zip.ZipFile jar = new java.util.zip.ZipFile(ChildJvm.SAMPLES_JAR.toFile())) {
            original = jar.getInputStream(jar.getEntry("dev/ncclguard/samples/EpSample$Shifted.class")).readAllBytes();
        }
        ClassReader reader = new ClassReader(original);
        ClassWriter writer = new ClassWriter(reader, 0);
        reader.accept(new ClassVisitor(Opcodes.ASM9, writer) {
            @Override
            public MethodVisitor visitMethod(int access, String name, String descriptor, String signature,
                    String[] exceptions) {
                return new MethodVisitor(Opcodes.ASM9, super.visitMethod(access, name, descriptor, signature, exceptions)) {
                    @Override
                    public void visitLineNumber(int line, Label start) {
                        super.visitLineNumber(line + by, start);
                    }
                };
            }
        }, 0);
        return writer.toByteArray();
    }

    @Test
    void aStackNamedLateReadsTheLinesOfTheClassVersionThatMadeIt() throws Exception {
        // ep-redefine: Shifted.make() makes an event twice at one stack on each of two threads,
        // Shifted redefined in between with its lines moved by 1000 (as a hot swap moves them): the
        // events made before read the old lines, those made after the new ones, whether the stack
        // was named late from the native depot or by the first creation's Throwable
        Path shifted = dir.resolve("Shifted.class");
        Files.write(shifted, shiftedLines(1000));
        for (String home : new String[] {System.getProperty("java.home"), JDK25}) {
            Path report = dir.resolve("redefine-" + Path.of(home).getFileName() + ".json");
            Output r = ChildJvm.sample().javaHome(home).agent("report=" + report)
                    .jvmArg("-javaagent:" + ChildJvm.SAMPLES_JAR).jvmArg("-Dsamples.redefine-with=" + shifted)
                    .run("ep-redefine", "--ranks", "1", "--iters", "1");
            assertEquals(0, r.exitCode(), r.describe());
            Map<String, List<List<String>>> byThread = eventStacksByThread(report, (thread, frames) ->
                    thread.startsWith("redefine-") && frames.stream().noneMatch(f -> f.contains("EpSample.forward(")));
            assertEquals(List.of("redefine-after", "redefine-first"), List.copyOf(byThread.keySet()), r.describe());
            Integer original = null;
            for (Map.Entry<String, List<List<String>>> t : byThread.entrySet()) {
                List<List<String>> stacks = t.getValue();
                assertEquals(2, stacks.size(), t.toString());
                List<Integer> lines = new ArrayList<>();
                for (List<String> frames : stacks) {
                    Matcher m = Pattern.compile("EpSample\\$Shifted\\.make\\(EpSample\\.java:(\\d+)\\)").matcher(frames.get(2));
                    assertTrue(m.find(), frames.toString());
                    lines.add(Integer.parseInt(m.group(1)));
                }
                lines.sort(null);
                String where = home + ", " + t.getKey() + ": " + stacks;
                assertEquals(lines.get(0) + 1000, lines.get(1), where);
                assertTrue(original == null || original.equals(lines.get(0)), where);
                original = lines.get(0);
                // the other frames are one stack's
                List<String> a = new ArrayList<>(stacks.get(0));
                List<String> b = new ArrayList<>(stacks.get(1));
                a.remove(2);
                b.remove(2);
                assertEquals(a, b, where);
            }
        }
    }

    @Test
    void anEventMadeOnAVirtualThreadNamesItsThreadAndItsFramesOnly() throws Exception {
        // ep-virtual on 25: the rank on a virtual thread, three more in turn on one carrier, each making events twice
        // at one stack, with every method given a jmethodID (as a sampling profiler gives them, so
        // that the native walk names every frame, the carrier's too): each leaked event names its
        // own virtual thread and stops at its VirtualThread.run, as a Throwable does; the native
        // part took each creation's stack (the virtual thread's frames alone: each JNI call's first
        // walk, then its memo), which Java names from the id's first record, with no walk of its own
        Path report = dir.resolve("virtual.json");
        Path methodIds = Path.of(System.getProperty("ncclguard.test.samplesClasses"),
                "dev/ncclguard/samples/ep/linux-x86_64/libmethod_ids.so");
        assertTrue(Files.isRegularFile(methodIds), methodIds.toString());
        Output r = ChildJvm.sample().javaHome(JDK25).env("NCCLGUARD_NATIVE_DEBUG", "1").agent("report=" + report)
                .jvmArg("-agentpath:" + methodIds)
                .jvmArg("-Djdk.virtualThreadScheduler.parallelism=1").jvmArg("-Djdk.virtualThreadScheduler.maxPoolSize=1")
                .run("ep-virtual", "--ranks", "1", "--iters", "1");
        assertEquals(0, r.exitCode(), r.describe());
        Map<String, List<List<String>>> byThread = eventStacksByThread(report,
                (thread, frames) -> frames.stream().anyMatch(f -> f.contains("EpSample.virtualTwice(")));
        assertEquals(List.of("virtual-0", "virtual-1", "virtual-2"), List.copyOf(byThread.keySet()), byThread.toString());
        for (Map.Entry<String, List<List<String>>> t : byThread.entrySet()) {
            assertEquals(2, t.getValue().size(), t.toString());
            for (List<String> frames : t.getValue()) {
                assertTrue(frames.get(frames.size() - 1).startsWith("java.lang.VirtualThread.run("), t.toString());
                assertTrue(frames.stream().noneMatch(f -> f.contains("ForkJoin")), t.toString());
            }
            assertEquals(t.getValue().get(0), t.getValue().get(1), t.toString());
        }
        // 3 virtual threads x 2 JNI calls x 100 creations: 99 a call from the call's memo (none when
        // a virtual thread's walk took no stack, nor when the memo could not be set up on one: the
        // rank runs on a virtual thread too, so the process's first creations are a virtual thread's)
        Matcher m = Pattern.compile("stack memo hits (\\d+)").matcher(r.stderr());
        assertTrue(m.find(), r.describe());
        assertTrue(Integer.parseInt(m.group(1)) >= 6 * 99, m.group());
    }

    @Test
    void aCleanRunOfTheRuntimeReportsNoLeakAndCountsItsCommunicators() throws Exception {
        Path report = dir.resolve("clean.json");
        Output r = ChildJvm.sample().agent("report=" + report).run("ep-clean");
        assertEquals(0, r.exitCode(), r.describe());
        JsonNode json = ReportJson.read(report);
        assertEquals(0, json.path("leaks").size(), json.toString());
        assertEquals(2, ReportJson.summary(json, "commsCreated"));
        assertEquals(2, ReportJson.summary(json, "commsReleased"));
    }

    @Test
    void cleanupReleasesWhatTheRuntimeLeftInC() throws Exception {
        Path report = dir.resolve("cleanup.json");
        Path alive = dir.resolve("alive.txt");
        Output r = ChildJvm.sample().agent("action=cleanup,report=" + report)
                .env("NCCLEMU_REPORT", alive.toString()).run("ep-leaky");
        assertEquals(0, r.exitCode(), r.describe());
        JsonNode json = ReportJson.read(report);
        for (JsonNode comm : ReportJson.leaks(json, "comm")) {
            assertEquals("destroyed", comm.path("cleanup").asText(), comm.toString());
        }
        for (JsonNode event : ReportJson.leaks(json, "event")) {
            assertEquals("synchronized", event.path("cleanup").asText(), event.toString());
        }
        assertEquals(6, ReportJson.summary(json, "cleaned"), json.toString());
        assertEquals(0, ReportJson.summary(json, "cleanupFailed"));
        // streams are synchronized, not destroyed, as for those made from Java: nothing pending on them
        List<String> left = ReportJson.aliveAtExit(alive);
        assertTrue(left.stream().allMatch(l -> l.startsWith("stream ") && l.endsWith(" pending 0")),
                "still alive after cleanup: " + left + "\n" + r.describe());
    }

    @Test
    void aCommunicatorMadeOnALibraryThreadCarriesItsNativeCallerAndNoJavaStack() throws Exception {
        Path report = dir.resolve("pthread.json");
        Output r = ChildJvm.sample().agent("report=" + report).run("ep-pthread", "--ranks", "1");
        assertEquals(0, r.exitCode(), r.describe());
        JsonNode json = ReportJson.read(report);
        List<JsonNode> comms = ReportJson.leaks(json, "comm");
        assertEquals(1, comms.size(), json.toString());
        JsonNode comm = comms.get(0);
        assertEquals("native", comm.path("bridge").asText());
        assertEquals(RUNTIME, comm.path("callerLibrary").asText(), comm.toString());
        assertEquals(0, comm.path("stack").size(), "no Java frames on a pthread of the library: " + comm);
        JsonNode backtrace = comm.path("nativeStack");
        assertTrue(backtrace.size() > 0, comm.toString());
        assertTrue(backtrace.path(0).asText().startsWith(RUNTIME + "+0x"), comm.toString());
        // the stream and event of the same runtime were made on the Java thread
        assertEquals(OPEN, ReportJson.leaks(json, "event").get(0).path("stack").path(0).asText(), json.toString());
    }

    @Test
    void sixteenThreadsOpeningAndClosingRuntimesWhileOthersQueryLeaveNoLeak() throws Exception {
        Path report = dir.resolve("stress.json");
        Output r = ChildJvm.sample().agent("report=" + report).run("ep-stress", "--iters", "25");
        assertEquals(0, r.exitCode(), r.describe());
        JsonNode json = ReportJson.read(report);
        assertEquals(0, json.path("leaks").size(), json.toString());
        long created = ReportJson.summary(json, "commsCreated");
        assertEquals(16 * 25 + 4, created, "16 workers x 25 runtimes, and the 4 queriers' own: " + json.path("summary"));
        assertEquals(created, ReportJson.summary(json, "commsReleased"));
        assertTrue(r.stdout().contains("samples: ep-stress: 400 runtimes opened and closed"), r.describe());
        assertFalse(r.stderr().contains("tracking failed"), r.describe());
    }

    @Test
    void nativeOffWithTheProfilerOffIsTheAgentWithoutItsNativePart() throws Exception {
        Path report = dir.resolve("off.json");
        Output r = ChildJvm.sample().agent("native=off,nccl-profiler=off,report=" + report).run("ep-leaky");
        assertEquals(0, r.exitCode(), r.describe());
        JsonNode json = ReportJson.read(report);
        assertEquals(0, json.path("leaks").size(), "calls made in C are not seen: " + json);
        assertEquals(0, ReportJson.summary(json, "commsCreated"));
        assertFalse(r.stderr().contains("native part"), r.describe());
    }

    @Test
    void aLibraryOfAnotherArchitectureSaysSoInOneLineAndTheJavaBridgesGoOn() throws Exception {
        // the agent's own library, marked as built for another architecture (e_machine: AArch64)
        byte[] library;
        try (var jar = new java.util.zip.ZipFile(ChildJvm.AGENT_JAR.toFile())) {
            var entry = jar.getEntry("inst/ncclguard-native/linux-x86_64/libncclguard.so");
            try (var in = jar.getInputStream(entry)) {
                library = in.readAllBytes();
            }
        }
        library[18] = (byte) 0xB7;
        library[19] = 0;
        Path notALibrary = Files.write(dir.resolve("libncclguard.so"), library);
        Path report = dir.resolve("unloadable.json");
        Output r = ChildJvm.sample().jvmArg("-Dncclguard.test.native-library=" + notALibrary)
                .agent("report=" + report).run("leaky");
        assertEquals(0, r.exitCode(), r.describe());
        List<String> lines = r.stderr().lines().filter(l -> l.contains("the native part is off")).toList();
        assertEquals(1, lines.size(), r.describe());
        assertTrue(lines.get(0).startsWith("ncclguard: the native part is off: cannot load " + notALibrary), lines.get(0));
        assertTrue(lines.get(0).contains("the Java bridges go on"), lines.get(0));
        assertTrue(lines.get(0).contains("AARCH64"), "the loader's reason: " + lines.get(0));
        assertFalse(r.stderr().contains("is no option"), "the test property is the agent's own: " + r.describe());
        JsonNode json = ReportJson.read(report);
        assertEquals(2, ReportJson.leaks(json, "comm").size(), json.toString());
        assertEquals("jna-interface", ReportJson.leaks(json, "comm").get(0).path("bridge").asText());
    }

    @Test
    void aNativeDirThatCannotBeWrittenSaysSoInOneLineAndTheJavaBridgesGoOn() throws Exception {
        Path file = Files.writeString(dir.resolve("a-file"), "x");
        Path report = dir.resolve("unwritable.json");
        Output r = ChildJvm.sample().agent("native-dir=" + file + ",report=" + report).run("leaky");
        assertEquals(0, r.exitCode(), r.describe());
        List<String> lines = r.stderr().lines().filter(l -> l.contains("the native part is off")).toList();
        assertEquals(1, lines.size(), r.describe());
        assertTrue(lines.get(0).contains("cannot write it under " + file), lines.get(0));
        assertTrue(lines.get(0).contains("set native-dir to a directory"), lines.get(0));
        assertEquals(2, ReportJson.leaks(ReportJson.read(report), "comm").size(), r.describe());
    }

    @Test
    void theLibraryIsExtractedIntoAPrivateDirectoryNamedAfterItsContentAndReused() throws Exception {
        Path base = Files.createDirectory(dir.resolve("native"));
        for (int run = 0; run < 2; run++) {
            Output r = ChildJvm.sample().agent("native-dir=" + base + ",text=none").run("ep-clean", "--ranks", "1");
            assertEquals(0, r.exitCode(), r.describe());
        }
        List<Path> libraries;
        try (var files = Files.walk(base)) {
            libraries = files.filter(p -> p.getFileName().toString().equals("libncclguard.so")).toList();
        }
        assertEquals(1, libraries.size(), "one file for both runs: " + libraries);
        Path hashDir = libraries.get(0).getParent();
        assertTrue(hashDir.getFileName().toString().matches("[0-9a-f]{16}"), hashDir.toString());
        assertTrue(hashDir.getParent().getFileName().toString().matches("ncclguard-\\d+"), hashDir.toString());
        for (Path d : List.of(hashDir, hashDir.getParent())) {
            assertEquals("rwx------", java.nio.file.attribute.PosixFilePermissions.toString(
                    Files.getPosixFilePermissions(d)), d.toString());
        }
        try (var files = Files.list(hashDir)) {
            assertEquals(1, files.count(), "no temporary file left beside it");
        }
    }

    @Test
    void handWrittenJniNamedAfterNcclIsCountedOnceAsWithoutTheNativePart() throws Exception {
        JsonNode with = leakyThrough("jni", "");
        JsonNode without = leakyThrough("jni", "native=off,nccl-profiler=off,");
        for (String field : List.of("commsCreated", "leakedComms", "pendingEvents", "unsyncedStreams")) {
            assertEquals(ReportJson.summary(without, field), ReportJson.summary(with, field), field + ": " + with.path("summary"));
        }
        for (JsonNode leak : with.path("leaks")) {
            assertEquals("jni", leak.path("bridge").asText(), "the Java bridge's view, not the interposer's: " + leak);
        }
    }

    @Test
    void jniBindingsFileMethodsAreCountedOnceAndWithoutTheFileTheInterposerSeesThem() throws Exception {
        JsonNode bound = leakyThrough("jni-bindings", "bindings=" + BridgesIT.BINDINGS + ",");
        assertEquals(2, ReportJson.summary(bound, "commsCreated"), bound.toString());
        for (JsonNode comm : ReportJson.leaks(bound, "comm")) {
            assertEquals("jni", comm.path("bridge").asText(), comm.toString());
        }
        JsonNode unbound = leakyThrough("jni-bindings", "");
        assertEquals(2, ReportJson.summary(unbound, "commsCreated"), unbound.toString());
        for (JsonNode comm : ReportJson.leaks(unbound, "comm")) {
            assertEquals("native", comm.path("bridge").asText(), comm.toString());
            // the samples extract their JNI library to a temporary file: ncclguard-samples-jni<random>.so
            assertTrue(comm.path("callerLibrary").asText().matches("ncclguard-samples-jni\\d*\\.so"), comm.toString());
        }
    }

    @Test
    void javacppIsCountedOnceAsWithoutTheNativePart() throws Exception {
        JsonNode with = javacppLeaky("");
        JsonNode without = javacppLeaky("native=off,nccl-profiler=off,");
        for (String field : List.of("commsCreated", "leakedComms", "pendingEvents", "unsyncedStreams")) {
            assertEquals(ReportJson.summary(without, field), ReportJson.summary(with, field), field + ": " + with.path("summary"));
        }
        assertEquals(2, ReportJson.summary(with, "commsCreated"));
        for (JsonNode leak : with.path("leaks")) {
            assertEquals("javacpp", leak.path("bridge").asText(), leak.toString());
        }
    }

    @Test
    void aSuppressionNamingTheCallingLibraryLeavesItsCallsOut() throws Exception {
        Path suppress = Files.writeString(dir.resolve("suppress.txt"), "library:" + RUNTIME + "\n");
        Path report = dir.resolve("suppressed.json");
        Output r = ChildJvm.sample().agent("nccl-profiler=off,suppress=" + suppress + ",report=" + report)
                .run("ep-leaky", "--ranks", "1");
        assertEquals(0, r.exitCode(), r.describe());
        JsonNode json = ReportJson.read(report);
        assertEquals(0, json.path("leaks").size(), json.toString());
        assertTrue(json.toString().contains(RUNTIME), "the report names the suppressed library: " + json);
    }

    @Test
    void behindASecondInterposerInLdPreloadTheRuntimeRunsAsWithoutTheAgentAndIsTracked() throws Exception {
        // another tool's interposer first in the global scope, forwarding with dlsym(RTLD_NEXT): the
        // runtime's calls reach it, then the agent's wrappers (its call is their caller), then NCCL
        String other = otherInterposer().toString();
        Output without = ChildJvm.sample().env("LD_PRELOAD", other).run("ep-clean");
        Path clean = dir.resolve("other-clean.json");
        Output with = ChildJvm.sample().env("LD_PRELOAD", other).agent("report=" + clean).run("ep-clean");
        assertEquals(0, without.exitCode(), without.describe());
        assertEquals(0, with.exitCode(), with.describe());
        assertEquals(sampleLines(without), sampleLines(with), with.describe());
        JsonNode json = ReportJson.read(clean);
        assertEquals(0, json.path("leaks").size(), json.toString());
        assertEquals(2, ReportJson.summary(json, "commsCreated"), json.toString());
        assertEquals(2, ReportJson.summary(json, "commsReleased"), json.toString());

        Path leaky = dir.resolve("other-leaky.json");
        Output r = ChildJvm.sample().env("LD_PRELOAD", other).agent("report=" + leaky).run("ep-leaky");
        assertEquals(0, r.exitCode(), r.describe());
        List<JsonNode> comms = ReportJson.leaks(ReportJson.read(leaky), "comm");
        assertEquals(2, comms.size(), r.describe());
        for (JsonNode comm : comms) {
            assertEquals("native", comm.path("bridge").asText(), comm.toString());
            // import-slot patching leaves what a library in LD_PRELOAD defines to it: the other
            // interposer still gets each call, and its call is the wrappers' caller
            assertEquals("libng_other.so", comm.path("callerLibrary").asText(), "the agent's caller: " + comm);
            assertEquals(OPEN, comm.path("stack").path(0).asText(), comm.toString());
        }
    }

    @Test
    void aStaticNcclExportedRuntimeWhoseCloseTailCallsItsDestroyRunsAsWithoutTheAgent() throws Exception {
        // libep_runtime_static_tail.so: the emulator's NCCL linked in with its API exported, and
        // close ending in `return ncclCommDestroy(...)`, a jump (the samples' Makefile checks it):
        // the wrapper's return address is the JVM's, and the real destroy is inside the runtime
        String tail = "-D" + EpTail.PROPERTY + "=true";
        Output without = ChildJvm.sample().jvmArg(tail).run("ep-static-clean", "--ranks", "1");
        Path clean = dir.resolve("tail-clean.json");
        Output with = ChildJvm.sample().jvmArg(tail).agent("report=" + clean).run("ep-static-clean", "--ranks", "1");
        assertEquals(0, without.exitCode(), without.describe());
        assertEquals(0, with.exitCode(), with.describe());
        assertEquals(sampleLines(without), sampleLines(with), with.describe());
        assertFalse(with.stderr().contains("defines it"), "no call failed for want of the real function: " + with.describe());
        JsonNode json = ReportJson.read(clean);
        assertEquals(0, json.path("leaks").size(), json.toString());
        assertEquals(1, ReportJson.summary(json, "commsCreated"), json.toString());
        assertEquals(1, ReportJson.summary(json, "commsReleased"), json.toString());

        Path leaky = dir.resolve("tail-leaky.json");
        Output r = ChildJvm.sample().jvmArg(tail).agent("report=" + leaky).run("ep-static-leaky", "--ranks", "1");
        assertEquals(0, r.exitCode(), r.describe());
        List<JsonNode> comms = ReportJson.leaks(ReportJson.read(leaky), "comm");
        assertEquals(1, comms.size(), r.describe());
        assertEquals("native", comms.get(0).path("bridge").asText(), comms.get(0).toString());
        assertEquals(EpTail.LIBRARY, comms.get(0).path("callerLibrary").asText(), comms.get(0).toString());

        Path cleanup = dir.resolve("tail-cleanup.json");
        r = ChildJvm.sample().jvmArg(tail).agent("action=cleanup,report=" + cleanup).run("ep-static-leaky", "--ranks", "1");
        assertEquals(0, r.exitCode(), r.describe());
        JsonNode cleaned = ReportJson.read(cleanup);
        comms = ReportJson.leaks(cleaned, "comm");
        assertEquals(1, comms.size(), cleaned.toString());
        assertEquals("destroyed", comms.get(0).path("cleanup").asText(), comms.get(0).toString());
        assertEquals(0, ReportJson.summary(cleaned, "cleanupFailed"), cleaned.toString());
    }

    /** The samples' tail-call build of the static runtime. */
    private static final class EpTail {
        static final String PROPERTY = "ncclguard.samples.ep.tailClose";
        static final String LIBRARY = "libep_runtime_static_tail.so";
    }

    /** The sample's own lines (results, counts), without the agent's. */
    private static List<String> sampleLines(Output r) {
        return r.stdout().lines().filter(l -> l.startsWith("samples:")).toList();
    }

    /** native-shim's second interposer (its C tests' other_interposer.c), built as scripts/gpu/84-never-changes.sh builds it. */
    private Path otherInterposer() throws Exception {
        Path root = Path.of("").toAbsolutePath().getParent(); // failsafe runs in agent/
        Path source = root.resolve("native-shim/src/test/c/other_interposer.c");
        assertTrue(Files.isRegularFile(source), "no " + source);
        Path library = dir.resolve("libng_other.so");
        Process gcc = new ProcessBuilder("gcc", "-std=gnu11", "-O2", "-fPIC", "-shared", "-I" + root.resolve("abi"),
                "-o", library.toString(), source.toString(), "-ldl").redirectErrorStream(true).start();
        String out = new String(gcc.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        assertEquals(0, gcc.waitFor(), "gcc: " + out);
        return library;
    }

    private JsonNode leakyThrough(String bridge, String options) throws Exception {
        Path report = Files.createTempFile(dir, bridge, ".json");
        Output r = ChildJvm.sample().agent(options + "text=none,report=" + report).run("leaky", "--bridge", bridge);
        assertEquals(0, r.exitCode(), r.describe());
        return ReportJson.read(report);
    }

    private JsonNode javacppLeaky(String options) throws Exception {
        Path report = Files.createTempFile(dir, "javacpp", ".json");
        Output r = BridgesIT.javacpp().agent(options + "text=none,report=" + report)
                .run("leaky", "--bridge", "javacpp");
        assertEquals(0, r.exitCode(), r.describe());
        return ReportJson.read(report);
    }
}
