package dev.ncclguard.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What the agent costs a whole JVM, measured on child JVMs run alternately with and without it:
 * <pre>
 * java -cp ncclguard-bench.jar dev.ncclguard.bench.ProcessBench startup|exit|memory \
 *     --agent agent/target/ncclguard-agent.jar --emu emulator/target/emu [--runs N] [--handles N]
 *     [--samples samples/target/ncclguard-samples.jar] [--out DIR]
 * </pre>
 * <ul>
 * <li>startup: wall time of {@code java -jar ncclguard-samples.jar clean --ranks 1 --iters 1} (JNA
 * loaded, NCCL and CUDA called), from the launch to the end of the process, exit report included.</li>
 * <li>exit: an application with N leaked events exits; from the end of its last shutdown hook (the
 * agent's hook starts after it) to the report files written (their modification times), to the
 * end of the process, and the process's CPU time in between; with stacks=on and off, the text
 * to a file or to stderr.</li>
 * <li>memory: heap in use after GC with N live events (and communicators), stacks=off, minus the
 * same without the agent, per handle.</li>
 * </ul>
 * Prints a Markdown table (min / median / max over the runs).
 */
public final class ProcessBench {
    private static final Pattern NUMBER = Pattern.compile("(-?\\d+)");

    private final Path agent;
    private final Path emu;
    private final Path out;
    private final String java;
    private final String benchJar;

    private ProcessBench(Path agent, Path emu, Path out) {
        this.agent = agent;
        this.emu = emu;
        this.out = out;
        this.java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        this.benchJar = System.getProperty("java.class.path");
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            throw new IllegalArgumentException("usage: ProcessBench startup|exit|memory --agent JAR --emu DIR [...]");
        }
        String[] rest = Arrays.copyOfRange(args, 1, args.length);
        Map<String, String> opts = Compare.parse(rest);
        Path out = Path.of(opts.getOrDefault("out", "bench/target/results")).toAbsolutePath();
        Files.createDirectories(out);
        ProcessBench bench = new ProcessBench(Path.of(Compare.required(opts, "agent")).toAbsolutePath(),
                Path.of(Compare.required(opts, "emu")).toAbsolutePath(), out);
        String table = switch (args[0]) {
            case "startup" -> bench.startup(Path.of(opts.getOrDefault("samples", "samples/target/ncclguard-samples.jar")),
                    Integer.parseInt(opts.getOrDefault("runs", "15")));
            case "exit" -> bench.exit(Integer.parseInt(opts.getOrDefault("handles", "100000")),
                    Integer.parseInt(opts.getOrDefault("runs", "5")));
            case "memory" -> bench.memory(Integer.parseInt(opts.getOrDefault("handles", "100000")),
                    Integer.parseInt(opts.getOrDefault("runs", "3")));
            default -> throw new IllegalArgumentException("unknown measurement " + args[0]);
        };
        Files.writeString(out.resolve(args[0] + ".md"), table, StandardCharsets.UTF_8);
        System.out.print(table);
    }

    // --- startup ---

    private String startup(Path samples, int runs) throws IOException, InterruptedException {
        List<String> base = List.of("-D" + GpuLibraries.EMU_PROPERTY + "=" + emu, "-jar", samples.toAbsolutePath().toString(),
                "clean", "--ranks", "1", "--iters", "1");
        List<Double> without = new ArrayList<>();
        List<Double> with = new ArrayList<>();
        List<Double> added = new ArrayList<>();
        for (int i = -2; i < runs; i++) { // two rounds to warm the file cache, not counted
            double a = timed(command(null, base), "startup-without");
            double b = timed(command("", base), "startup-with");
            if (i >= 0) {
                without.add(a);
                with.add(b);
                added.add(b - a);
            }
        }
        StringBuilder md = new StringBuilder();
        md.append(String.format(Locale.ROOT, "JVM start to exit of `java -jar ncclguard-samples.jar clean --ranks 1"
                + " --iters 1` on the emulator, %d runs each, alternating; ms, min / median / max.%n%n", runs));
        md.append("| run | ms | added ms (medians) | added ms, paired |\n| --- | --- | --- | --- |\n");
        md.append(String.format(Locale.ROOT, "| without the agent | %s | | |%n", Stats.of(without).format(0)));
        md.append(String.format(Locale.ROOT, "| with the agent | %s | %+.0f | %s |%n%n", Stats.of(with).format(0),
                Stats.of(with).median() - Stats.of(without).median(), Stats.of(added).format(0)));
        return md.toString();
    }

    /** Wall milliseconds of one child JVM; it must exit 0. */
    private double timed(List<String> command, String log) throws IOException, InterruptedException {
        long start = System.nanoTime();
        int status = run(command, log);
        double ms = (System.nanoTime() - start) / 1e6;
        if (status != 0) {
            throw new IllegalStateException(String.join(" ", command) + " exited " + status + ", see " + out.resolve(log + ".log"));
        }
        return ms;
    }

    // --- exit ---

    /** One way to run the exit measurement: agent options (null: without it), and where the text goes. */
    private record ExitVariant(String name, String stacks, boolean textToFile) {
        boolean agent() {
            return stacks != null;
        }
    }

    private String exit(int handles, int runs) throws IOException, InterruptedException {
        List<ExitVariant> variants = List.of(new ExitVariant("(without the agent)", null, false),
                new ExitVariant("stacks=on, report=…, text=…", "on", true),
                new ExitVariant("stacks=off, report=…, text=…", "off", true),
                new ExitVariant("stacks=off, report=…, text=stderr", "off", false));
        Map<ExitVariant, List<Double>> written = new java.util.LinkedHashMap<>();
        Map<ExitVariant, List<Double>> ended = new java.util.LinkedHashMap<>();
        Map<ExitVariant, List<Double>> cpu = new java.util.LinkedHashMap<>();
        Map<ExitVariant, String> leaks = new java.util.HashMap<>();
        for (ExitVariant v : variants) {
            written.put(v, new ArrayList<>());
            ended.put(v, new ArrayList<>());
            cpu.put(v, new ArrayList<>());
        }
        // round by round, every variant once, so that each meets the same load on the machine
        for (int i = 0; i < runs; i++) {
            for (ExitVariant v : variants) {
                exitRun(v, handles, written.get(v), ended.get(v), cpu.get(v), leaks);
            }
        }
        StringBuilder md = new StringBuilder();
        md.append(String.format(Locale.ROOT, "Exit with %d leaked events (each recorded, never waited for), %d runs"
                + " per row, rows interleaved; from the end of the application's last shutdown hook: ms to the JSON"
                + " and text reports written (file times, a few ms granular; with text=stderr the JSON file's,"
                + " the text follows it on stderr), ms to the end of the process, and the CPU time the process"
                + " spent in that interval (all threads: exit hook, exit probe, GC, JIT), ms. Min / median / max;"
                + " load average %s before the runs.%n%n", handles, runs, loadAverage()));
        md.append("| agent options | reports written, ms | process ended, ms | process CPU after the hook, ms | leaks in the JSON report |\n");
        md.append("| --- | --- | --- | --- | --- |\n");
        for (ExitVariant v : variants) {
            md.append(String.format(Locale.ROOT, "| %s | %s | %s | %s | %s |%n", v.name(),
                    v.agent() ? Stats.of(written.get(v)).format(0) : "", Stats.of(ended.get(v)).format(0),
                    Stats.of(cpu.get(v)).format(0), leaks.getOrDefault(v, "")));
        }
        return md.append('\n').toString();
    }

    private void exitRun(ExitVariant v, int handles, List<Double> written, List<Double> ended, List<Double> cpu,
            Map<ExitVariant, String> leaks) throws IOException, InterruptedException {
        Path json = out.resolve("exit-report.json");
        Path text = out.resolve("exit-report.txt");
        Files.deleteIfExists(json);
        Files.deleteIfExists(text);
        String options = !v.agent() ? null
                : "stacks=" + v.stacks() + ",report=" + json + ",text=" + (v.textToFile() ? text : "stderr");
        List<String> command = command(options, List.of("-Xmx2g", "-D" + GpuLibraries.EMU_PROPERTY + "=" + emu,
                "-cp", benchJar, ManyHandles.class.getName(), "exit", Integer.toString(handles)));
        String log = "exit-" + (!v.agent() ? "without" : "stacks-" + v.stacks() + (v.textToFile() ? "" : "-stderr"));
        Path logFile = out.resolve(log + ".log");
        int status = run(withChildCpu(command), log);
        long end = System.currentTimeMillis();
        if (status != 0) {
            throw new IllegalStateException("exit run failed (" + status + "), see " + logFile);
        }
        long hookEnd = valueAfter(logFile, "hook-end-ms=");
        ended.add((double) (end - hookEnd));
        double childCpuMs = valueAfter(logFile, "child-cpu-ticks=") * 1000.0 / valueAfter(logFile, "clk-tck=");
        cpu.add(childCpuMs - valueAfter(logFile, "hook-cpu-ns=") / 1e6);
        if (v.agent()) {
            long writtenAt = Math.max(Files.getLastModifiedTime(json).toMillis(),
                    v.textToFile() ? Files.getLastModifiedTime(text).toMillis() : 0);
            written.add((double) (writtenAt - hookEnd));
            leaks.put(v, pendingEvents(json));
        }
    }

    /**
     * The command run by a shell that prints, once it ended, the CPU time it used (user and system,
     * all threads, in clock ticks of {@code clk-tck=} per second): the shell's children's times
     * from /proc, which the JVM's own counters cannot give after its last hook.
     */
    private static List<String> withChildCpu(List<String> command) {
        List<String> wrapped = new ArrayList<>(List.of("sh", "-c", "\"$@\"; s=$?; set -- $(cat /proc/$$/stat);"
                + " echo \"child-cpu-ticks=$((${16} + ${17})) clk-tck=$(getconf CLK_TCK)\"; exit $s", "sh"));
        wrapped.addAll(command);
        return wrapped;
    }

    private static String loadAverage() {
        try {
            String[] fields = Files.readString(Path.of("/proc/loadavg")).split(" ");
            return fields[0] + " " + fields[1] + " " + fields[2];
        } catch (IOException | RuntimeException e) {
            return "unknown";
        }
    }

    private static String pendingEvents(Path json) throws IOException {
        Matcher m = Pattern.compile("\"pendingEvents\"\\s*:\\s*(\\d+)").matcher(Files.readString(json));
        return m.find() ? m.group(1) + " pending events" : "?";
    }

    // --- memory ---

    private String memory(int handles, int runs) throws IOException, InterruptedException {
        StringBuilder md = new StringBuilder();
        md.append(String.format(Locale.ROOT, "Heap in use after full GCs (-XX:+UseSerialGC) grown by %d live handles,"
                + " with the agent (stacks=off) minus without, per handle; %d runs each, alternating;"
                + " bytes, min / median / max.%n%n", handles, runs));
        md.append("| handles | growth without the agent, B/handle | growth with, B/handle | added B/handle (paired) |\n");
        md.append("| --- | --- | --- | --- |\n");
        for (String kind : new String[] {"events", "comms"}) {
            List<Double> without = new ArrayList<>();
            List<Double> with = new ArrayList<>();
            List<Double> added = new ArrayList<>();
            for (int i = 0; i < runs; i++) {
                double a = heapDelta(null, kind, handles) / handles;
                double b = heapDelta("stacks=off,text=none", kind, handles) / handles;
                without.add(a);
                with.add(b);
                added.add(b - a);
            }
            md.append(String.format(Locale.ROOT, "| %s | %s | %s | %s |%n", kind, Stats.of(without).format(1),
                    Stats.of(with).format(1), Stats.of(added).format(1)));
        }
        return md.append('\n').toString();
    }

    private double heapDelta(String options, String kind, int handles) throws IOException, InterruptedException {
        List<String> command = command(options, List.of("-XX:+UseSerialGC", "-Xms2g", "-Xmx2g",
                "-D" + GpuLibraries.EMU_PROPERTY + "=" + emu, "-cp", benchJar, ManyHandles.class.getName(),
                "memory", kind, Integer.toString(handles)));
        String log = "memory-" + kind + (options == null ? "-without" : "-with");
        int status = run(command, log);
        if (status != 0) {
            throw new IllegalStateException("memory run failed (" + status + "), see " + out.resolve(log + ".log"));
        }
        return valueAfter(out.resolve(log + ".log"), "heap-delta-bytes=");
    }

    // --- child JVMs ---

    /** {@code java [-javaagent:agent[=options]] args}; options null: without the agent. */
    private List<String> command(String agentOptions, List<String> args) {
        List<String> command = new ArrayList<>();
        command.add(java);
        command.add("--enable-native-access=ALL-UNNAMED");
        if (agentOptions != null) {
            command.add("-javaagent:" + agent + (agentOptions.isEmpty() ? "" : "=" + agentOptions));
        }
        command.addAll(args);
        return command;
    }

    private int run(List<String> command, String log) throws IOException, InterruptedException {
        Path logFile = out.resolve(log + ".log");
        Process p = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(logFile.toFile()).start();
        return p.waitFor();
    }

    private static long valueAfter(Path log, String key) throws IOException {
        for (String line : Files.readAllLines(log)) {
            int at = line.indexOf(key);
            if (at >= 0) {
                Matcher m = NUMBER.matcher(line.substring(at + key.length()));
                if (m.lookingAt()) {
                    return Long.parseLong(m.group(1));
                }
            }
        }
        throw new IllegalStateException("no " + key + " in " + log);
    }
}
