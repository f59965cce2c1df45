package dev.ncclguard.testkit;

import static org.junit.jupiter.api.Assertions.fail;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A child JVM that keeps running while the test talks to it: the samples' serve scenario, fed
 * commands on stdin, its stdout read line by line as it comes. Always {@link #close()}d.
 */
public final class LiveChild implements AutoCloseable {
    private final Process process;
    private final Writer stdin;
    private final BlockingQueue<String> lines = new LinkedBlockingQueue<>();
    private final StringBuffer stdout = new StringBuffer();
    private final Path stderr;
    private final List<String> command;

    private LiveChild(List<String> command, Map<String, String> env) throws IOException {
        this.command = command;
        this.stderr = Files.createTempFile("live-child-err", ".txt");
        ProcessBuilder pb = new ProcessBuilder(command).redirectError(stderr.toFile());
        pb.environment().keySet().removeIf(k -> k.startsWith("NCCLGUARD_") || k.startsWith("NCCLEMU_")
                || k.startsWith("NCCL_RAS"));
        pb.environment().putAll(env);
        process = pb.start();
        stdin = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
        Thread reader = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(process.getInputStream(),
                    StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null) {
                    stdout.append(line).append('\n');
                    lines.add(line);
                }
            } catch (IOException e) {
                stdout.append("(stdout unreadable: ").append(e).append(")\n");
            }
        }, "live-child-stdout");
        reader.setDaemon(true);
        reader.start();
    }

    /** The serve scenario on {@code javaHome}'s java, with JVM arguments, environment and sample arguments. */
    public static LiveChild serve(String javaHome, List<String> jvmArgs, Map<String, String> env, String... sampleArgs)
            throws IOException {
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(javaHome, "bin", "java").toString());
        cmd.add("-Dncclguard.emu=" + ChildJvm.EMU);
        cmd.addAll(jvmArgs);
        cmd.addAll(List.of("-jar", ChildJvm.SAMPLES_JAR.toString(), "serve"));
        cmd.addAll(List.of(sampleArgs));
        LiveChild child = new LiveChild(cmd, env);
        child.await("serve: ready");
        return child;
    }

    /**
     * Another long-running sample scenario ({@code sampleArgs}, the scenario first) that reads
     * commands on stdin, ready once it prints a line starting with {@code ready}.
     */
    public static LiveChild sample(String javaHome, List<String> jvmArgs, Map<String, String> env, String ready,
            String... sampleArgs) throws IOException {
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(javaHome, "bin", "java").toString());
        cmd.add("-Dncclguard.emu=" + ChildJvm.EMU);
        cmd.addAll(jvmArgs);
        cmd.addAll(List.of("-jar", ChildJvm.SAMPLES_JAR.toString()));
        cmd.addAll(List.of(sampleArgs));
        LiveChild child = new LiveChild(cmd, env);
        child.await(ready);
        return child;
    }

    public long pid() {
        return process.pid();
    }

    public void send(String command) throws IOException {
        stdin.write(command + "\n");
        stdin.flush();
    }

    /** Waits (up to 60 s) for a stdout line starting with {@code prefix}. */
    public String await(String prefix) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        try {
            while (System.nanoTime() < deadline) {
                String line = lines.poll(100, TimeUnit.MILLISECONDS);
                if (line != null && line.startsWith(prefix)) {
                    return line;
                }
                if (line == null && !process.isAlive() && lines.isEmpty()) {
                    break;
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        fail("no line '" + prefix + "...' from the child\n" + describe());
        return null;
    }

    /** Sends stop and waits (up to 60 s) for the exit status. */
    public int stop() throws Exception {
        send("stop");
        stdin.close();
        if (!process.waitFor(60, TimeUnit.SECONDS)) {
            fail("the child did not stop within 60 s\n" + describe());
        }
        return process.exitValue();
    }

    public boolean alive() {
        return process.isAlive();
    }

    public String stdout() {
        return stdout.toString();
    }

    public String stderr() throws IOException {
        return Files.readString(stderr, StandardCharsets.UTF_8);
    }

    public String describe() {
        String err;
        try {
            err = stderr();
        } catch (IOException e) {
            err = "(unreadable: " + e + ")";
        }
        return String.join(" ", command) + "\n--- stdout\n" + stdout + "--- stderr\n" + err;
    }

    @Override
    public void close() throws Exception {
        if (process.isAlive()) {
            process.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
        }
        Files.deleteIfExists(stderr);
    }
}
