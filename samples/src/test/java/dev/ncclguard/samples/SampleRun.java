package dev.ncclguard.samples;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.sun.jna.Native;
import java.io.File;
import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * One run of the samples' main class in a child JVM, against the emulator, with its output and the
 * emulator's report. Not agent's testkit.ChildJvm: samples is built before the agent, whose
 * integration tests run the samples jar.
 */
final class SampleRun {
    /** A hang guard only: a scenario that has not ended by then is stuck. */
    private static final long HANG_LIMIT_SECONDS = 120;

    final int exitCode;
    final String stdout;
    final String stderr;
    /** What NCCLEMU_REPORT wrote at exit: the communicators, events and streams still alive. */
    final String aliveAtExit;

    private SampleRun(int exitCode, String stdout, String stderr, String aliveAtExit) {
        this.exitCode = exitCode;
        this.stdout = stdout;
        this.stderr = stderr;
        this.aliveAtExit = aliveAtExit;
    }

    /** The emulator folder the build gives the tests; absent libraries fail the test, never skip it. */
    static Path emulator() {
        String dir = System.getProperty(GpuLibraries.EMU_PROPERTY);
        assertTrue(dir != null && !dir.isEmpty(),
                "system property " + GpuLibraries.EMU_PROPERTY + " is not set; run the tests through Maven");
        Path emu = Path.of(dir);
        assertTrue(Files.isRegularFile(emu.resolve(GpuLibraries.NCCL)) && Files.isRegularFile(emu.resolve(GpuLibraries.CUDART)),
                "the emulator's " + GpuLibraries.NCCL + " and " + GpuLibraries.CUDART + " are not in " + emu
                        + ": build the emulator in the same reactor (mvn -B -pl samples -am verify)");
        return emu;
    }

    static SampleRun of(Map<String, String> env, String... args) throws IOException, InterruptedException {
        return withEmulator(emulator().toString(), env, args);
    }

    static SampleRun withEmulator(String emulatorDir, Map<String, String> env, String... args)
            throws IOException, InterruptedException {
        return run(emulatorDir, env, null, args);
    }

    /** A run whose stdin is {@code input} (the serve scenario's commands). */
    static SampleRun withInput(String input, String... args) throws IOException, InterruptedException {
        return run(emulator().toString(), Map.of(), input, args);
    }

    private static SampleRun run(String emulatorDir, Map<String, String> env, String input, String... args)
            throws IOException, InterruptedException {
        Path work = Files.createTempDirectory("ncclguard-samples-test");
        Path out = work.resolve("stdout");
        Path err = work.resolve("stderr");
        Path report = work.resolve("emulator-report.txt");
        List<String> command = new ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-D" + GpuLibraries.EMU_PROPERTY + "=" + emulatorDir,
                "-cp", classPath(),
                Samples.class.getName()));
        command.addAll(List.of(args));
        ProcessBuilder builder = new ProcessBuilder(command).redirectOutput(out.toFile()).redirectError(err.toFile());
        if (input != null) {
            Path in = work.resolve("stdin");
            Files.writeString(in, input);
            builder.redirectInput(in.toFile());
        }
        Map<String, String> childEnv = builder.environment();
        childEnv.remove(GpuLibraries.EMU_ENV);
        childEnv.put("NCCLEMU_REPORT", report.toString());
        childEnv.putAll(new HashMap<>(env));
        Process process = builder.start();
        if (!process.waitFor(HANG_LIMIT_SECONDS, TimeUnit.SECONDS)) {
            process.destroyForcibly().waitFor();
            fail("samples " + String.join(" ", args) + " did not end within " + HANG_LIMIT_SECONDS + " s; stdout:\n"
                    + Files.readString(out) + "\nstderr:\n" + Files.readString(err));
        }
        String alive = Files.exists(report) ? Files.readString(report) : null;
        return new SampleRun(process.exitValue(), Files.readString(out), Files.readString(err), alive);
    }

    /** The samples' classes and JNA, the two things the samples jar holds. */
    private static String classPath() {
        return location(Samples.class) + File.pathSeparator + location(Native.class);
    }

    private static String location(Class<?> type) {
        try {
            return Path.of(type.getProtectionDomain().getCodeSource().getLocation().toURI()).toString();
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    public String toString() {
        return "exit " + exitCode + "\n--- stdout\n" + stdout + "--- stderr\n" + stderr + "--- alive at exit\n" + aliveAtExit;
    }
}
