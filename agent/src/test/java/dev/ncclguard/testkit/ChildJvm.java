package dev.ncclguard.testkit;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Runs a sample (or any main class, or a jar) in a child JVM, optionally under the agent, against
 * the emulator, and collects its exit status and output as an {@link Output}: a test names the main
 * class, the agent's options and the environment, runs it, and asserts on what it wrote. Paths come
 * from failsafe's system properties, so only integration tests use this class.
 */
public final class ChildJvm {
    public static final Path AGENT_JAR = Path.of(required("ncclguard.test.agentJar"));
    public static final Path SAMPLES_JAR = Path.of(required("ncclguard.test.samplesJar"));
    /** The emulator's libraries (libnccl.so.2, libcudart.so.12): where the build put them. */
    public static final Path EMU = Path.of(required("ncclguard.test.emu"));

    private String javaHome = System.getProperty("java.home");
    private String agentOptions;
    private final List<String> jvmArgs = new ArrayList<>();
    private final Map<String, String> env = new HashMap<>();
    private List<String> classpathAndMain = List.of("-jar", SAMPLES_JAR.toString());
    private long timeoutSeconds = 120;
    /** Whether the child is told where the emulator is (-Dncclguard.emu): not for the agent's CLI. */
    private boolean emulator = true;

    /** The samples jar against the emulator; {@link #mainClass} runs another main class instead. */
    public static ChildJvm sample() {
        assertTrue(Files.isRegularFile(EMU.resolve("libnccl.so.2")),
                "the emulator is not built at " + EMU + ": run the emulator module first");
        assertTrue(Files.isRegularFile(AGENT_JAR), "no agent jar at " + AGENT_JAR);
        assertTrue(Files.isRegularFile(SAMPLES_JAR), "no samples jar at " + SAMPLES_JAR);
        return new ChildJvm();
    }

    /** {@code java -jar ncclguard-agent.jar ARGS}: the agent jar's command line, as a user runs it. */
    public static ChildJvm agentCli() {
        assertTrue(Files.isRegularFile(AGENT_JAR), "no agent jar at " + AGENT_JAR);
        ChildJvm child = new ChildJvm();
        child.classpathAndMain = List.of("-jar", AGENT_JAR.toString());
        child.emulator = false;
        return child;
    }

    private static String required(String key) {
        String value = System.getProperty(key);
        if (value == null) {
            throw new IllegalStateException("system property " + key + " is not set (run through Maven failsafe)");
        }
        return value;
    }

    public ChildJvm agent(String options) {
        this.agentOptions = options;
        return this;
    }

    public ChildJvm javaHome(String home) {
        this.javaHome = home;
        return this;
    }

    public ChildJvm jvmArg(String arg) {
        jvmArgs.add(arg);
        return this;
    }

    public ChildJvm env(String key, String value) {
        env.put(key, value);
        return this;
    }

    public ChildJvm mainClass(String classpath, String mainClass) {
        this.classpathAndMain = List.of("-cp", classpath, mainClass);
        return this;
    }

    public ChildJvm timeout(long seconds) {
        this.timeoutSeconds = seconds;
        return this;
    }

    public Output run(String... args) throws IOException, InterruptedException {
        return start(args).finish();
    }

    /** Starts the child and returns at once, for tests that act on it while it runs (signals). */
    public Running start(String... args) throws IOException {
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(javaHome, "bin", "java").toString());
        if (agentOptions != null) {
            cmd.add("-javaagent:" + AGENT_JAR + (agentOptions.isEmpty() ? "" : "=" + agentOptions));
        }
        if (emulator) {
            cmd.add("-Dncclguard.emu=" + EMU);
        }
        cmd.addAll(jvmArgs);
        cmd.addAll(classpathAndMain);
        cmd.addAll(List.of(args));
        Path out = Files.createTempFile("child-out", ".txt");
        Path err = Files.createTempFile("child-err", ".txt");
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectOutput(out.toFile()).redirectError(err.toFile());
        pb.environment().keySet().removeIf(k -> k.startsWith("NCCLGUARD_") || k.startsWith("NCCLEMU_"));
        pb.environment().putAll(env);
        long start = System.nanoTime();
        return new Running(pb.start(), out, err, start, cmd, timeoutSeconds);
    }

    /** A child that runs. */
    public static final class Running {
        public final Process process;
        private final Path out;
        private final Path err;
        private final long startNanos;
        private final List<String> command;
        private final long timeoutSeconds;

        Running(Process process, Path out, Path err, long startNanos, List<String> command, long timeoutSeconds) {
            this.process = process;
            this.out = out;
            this.err = err;
            this.startNanos = startNanos;
            this.command = command;
            this.timeoutSeconds = timeoutSeconds;
        }

        /** Waits until the child printed {@code line} on stdout (or exited, or the timeout passed). */
        public void awaitStdoutLine(String line) throws IOException, InterruptedException {
            long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(timeoutSeconds);
            while (!Files.readString(out).lines().anyMatch(line::equals)) {
                if (!process.isAlive() || System.nanoTime() - until > 0) {
                    fail("child never printed '" + line + "': " + finish().describe());
                }
                Thread.sleep(10);
            }
        }

        /** Sends a signal by name (TERM, INT, ...) with kill(1). */
        public void signal(String name) throws IOException, InterruptedException {
            Process kill = new ProcessBuilder("kill", "-" + name, Long.toString(process.pid())).inheritIO().start();
            if (kill.waitFor() != 0) {
                fail("kill -" + name + " " + process.pid() + " failed");
            }
        }

        public Output finish() throws IOException, InterruptedException {
            if (!process.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor();
                fail("child JVM did not exit within " + timeoutSeconds + "s: " + command + "\nstderr:\n"
                        + Files.readString(err));
            }
            long millis = (System.nanoTime() - startNanos) / 1_000_000;
            Output r = new Output(process.exitValue(), Files.readString(out, StandardCharsets.UTF_8),
                    Files.readString(err, StandardCharsets.UTF_8), millis, command);
            Files.deleteIfExists(out);
            Files.deleteIfExists(err);
            return r;
        }
    }
}
