package dev.ncclguard.it;

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
 * Runs a sample (or any main class) in a child JVM, optionally under the agent, against the
 * emulator, and collects its exit status and output. Paths come from failsafe's system properties.
 */
final class ChildJvm {
    static final Path AGENT_JAR = Path.of(required("ncclguard.test.agentJar"));
    static final Path SAMPLES_JAR = Path.of(required("ncclguard.test.samplesJar"));
    static final Path EMU = Path.of(required("ncclguard.test.emu"));

    private String javaHome = System.getProperty("java.home");
    private String agentOptions;
    private final List<String> jvmArgs = new ArrayList<>();
    private final Map<String, String> env = new HashMap<>();
    private List<String> classpathAndMain = List.of("-jar", SAMPLES_JAR.toString());
    private long timeoutSeconds = 120;

    static ChildJvm sample() {
        assertTrue(Files.isRegularFile(EMU.resolve("libnccl.so.2")),
                "the emulator is not built at " + EMU + ": run the native-shim module first");
        assertTrue(Files.isRegularFile(AGENT_JAR), "no agent jar at " + AGENT_JAR);
        assertTrue(Files.isRegularFile(SAMPLES_JAR), "no samples jar at " + SAMPLES_JAR);
        return new ChildJvm();
    }

    private static String required(String key) {
        String value = System.getProperty(key);
        if (value == null) {
            throw new IllegalStateException("system property " + key + " is not set (run through Maven failsafe)");
        }
        return value;
    }

    ChildJvm agent(String options) {
        this.agentOptions = options;
        return this;
    }

    ChildJvm javaHome(String home) {
        this.javaHome = home;
        return this;
    }

    ChildJvm jvmArg(String arg) {
        jvmArgs.add(arg);
        return this;
    }

    ChildJvm env(String key, String value) {
        env.put(key, value);
        return this;
    }

    ChildJvm mainClass(String classpath, String mainClass) {
        this.classpathAndMain = List.of("-cp", classpath, mainClass);
        return this;
    }

    ChildJvm timeout(long seconds) {
        this.timeoutSeconds = seconds;
        return this;
    }

    Result run(String... args) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(javaHome, "bin", "java").toString());
        if (agentOptions != null) {
            cmd.add("-javaagent:" + AGENT_JAR + (agentOptions.isEmpty() ? "" : "=" + agentOptions));
        }
        cmd.add("-Dncclguard.emu=" + EMU);
        cmd.addAll(jvmArgs);
        cmd.addAll(classpathAndMain);
        cmd.addAll(List.of(args));
        Path out = Files.createTempFile("child-out", ".txt");
        Path err = Files.createTempFile("child-err", ".txt");
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectOutput(out.toFile()).redirectError(err.toFile());
        pb.environment().keySet().removeIf(k -> k.startsWith("NCCLGUARD_") || k.startsWith("NCCLEMU_"));
        pb.environment().putAll(env);
        long start = System.nanoTime();
        Process p = pb.start();
        if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
            p.destroyForcibly().waitFor();
            fail("child JVM did not exit within " + timeoutSeconds + "s: " + cmd + "\nstderr:\n"
                    + Files.readString(err));
        }
        long millis = (System.nanoTime() - start) / 1_000_000;
        Result r = new Result(p.exitValue(), Files.readString(out, StandardCharsets.UTF_8),
                Files.readString(err, StandardCharsets.UTF_8), millis, cmd);
        Files.deleteIfExists(out);
        Files.deleteIfExists(err);
        return r;
    }

    record Result(int exitCode, String stdout, String stderr, long millis, List<String> command) {
        /** For assertion messages: everything needed to see what the child did. */
        String describe() {
            return "exit " + exitCode + " after " + millis + " ms: " + String.join(" ", command)
                    + "\n--- stdout\n" + stdout + "--- stderr\n" + stderr;
        }
    }
}
