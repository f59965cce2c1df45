package dev.ncclguard.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Pattern;
import org.openjdk.jmh.profile.GCProfiler;
import org.openjdk.jmh.results.Result;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.runner.options.ChainedOptionsBuilder;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;

/**
 * Runs the JMH benchmarks in forks without and with the agent, interleaved round by round (one
 * fork per benchmark and variant per round, the variants' order reversed every other round), so
 * that the noise of a shared machine hits both sides alike. Prints, per benchmark and variant, the
 * per-fork scores (min / median / max), the ratio of the medians to the run without the agent,
 * the per-round paired ratios, and the bytes allocated per call (JMH's -prof gc) and their
 * difference.
 *
 * <pre>
 * java -cp bench/target/ncclguard-bench.jar dev.ncclguard.bench.Compare \
 *     --agent agent/target/ncclguard-agent.jar --emu emulator/target/emu --out bench/target/results \
 *     [--rounds 3] [--warmup 5] [--iterations 5] [--suite hot|native|create]... [--benchmarks REGEX]
 *     [--before OTHER-AGENT.jar]
 * </pre>
 * {@code --before} adds a variant "before": the first agent variant of each suite with that jar instead,
 * interleaved with the others, for comparing a change with the build it started from.
 */
public final class Compare {
    /** A JVM configuration: no agent, or the agent with these options (from the --before jar if before). */
    record Variant(String name, String agentOptions, boolean before) {
        Variant(String name, String agentOptions) {
            this(name, agentOptions, false);
        }
    }

    /** A benchmark class and the variants it runs under; the first variant is the baseline. */
    record Suite(String name, Class<?> benchmarks, String unit, List<Variant> variants) {
    }

    /** One fork's result: wall time and CPU time of the benchmark thread per call, bytes allocated per call. */
    record Fork(int round, String suite, String variant, String benchmark, double score, double cpu,
            double bytesPerOp) {
    }

    static final Variant WITHOUT = new Variant("without", null);
    // text=none: the text report at the end of a fork would only clutter JMH's output
    static final Variant WITH = new Variant("agent", "text=none");
    static final Variant WITH_STACKS_OFF = new Variant("agent,stacks=off", "stacks=off,text=none");
    static final Variant WITH_STACKS_ON = new Variant("agent,stacks=on", "stacks=on,text=none");

    static final List<Suite> SUITES = List.of(
            new Suite("hot", JnaInterfaceCalls.class, "ns/op", List.of(WITHOUT, WITH, WITH_STACKS_OFF)),
            new Suite("native", NativeMethodCalls.class, "ns/op", List.of(WITHOUT, WITH)),
            new Suite("create", Creations.class, "us/op", List.of(WITHOUT, WITH_STACKS_ON)));

    private Compare() {
    }

    /** The suites, each with a "before" variant after the others when asked for. */
    static List<Suite> suites(boolean withBefore) {
        if (!withBefore) {
            return SUITES;
        }
        List<Suite> out = new ArrayList<>();
        for (Suite s : SUITES) {
            List<Variant> variants = new ArrayList<>(s.variants());
            Variant first = variants.get(1);
            variants.add(new Variant("before", first.agentOptions(), true));
            out.add(new Suite(s.name(), s.benchmarks(), s.unit(), List.copyOf(variants)));
        }
        return List.copyOf(out);
    }

    public static void main(String[] args) throws IOException, RunnerException {
        Map<String, String> opts = parse(args);
        Path agent = Path.of(required(opts, "agent")).toAbsolutePath();
        Path emu = Path.of(required(opts, "emu")).toAbsolutePath();
        Path out = Path.of(opts.getOrDefault("out", "bench/target/results")).toAbsolutePath();
        int rounds = Integer.parseInt(opts.getOrDefault("rounds", "3"));
        int warmup = Integer.parseInt(opts.getOrDefault("warmup", "5"));
        int iterations = Integer.parseInt(opts.getOrDefault("iterations", "5"));
        List<String> only = opts.containsKey("suite") ? List.of(opts.get("suite").split(",")) : List.of();
        // a regex over the benchmark methods' names, to spend the rounds on the few that matter
        String benchmarks = opts.getOrDefault("benchmarks", "\\w+");
        if (!Files.isRegularFile(agent)) {
            throw new IllegalArgumentException("no agent jar at " + agent + ": build it first");
        }
        Path before = opts.containsKey("before") ? Path.of(opts.get("before")).toAbsolutePath() : null;
        if (before != null && !Files.isRegularFile(before)) {
            throw new IllegalArgumentException("no agent jar at " + before);
        }
        Files.createDirectories(out);

        List<Fork> forks = new ArrayList<>();
        for (int round = 1; round <= rounds; round++) {
            for (Suite suite : suites(before != null)) {
                if (!only.isEmpty() && !only.contains(suite.name())) {
                    continue;
                }
                List<Variant> order = new ArrayList<>(suite.variants());
                if (round % 2 == 0) {
                    java.util.Collections.reverse(order);
                }
                for (Variant variant : order) {
                    System.out.printf("round %d/%d: %s, %s%n", round, rounds, suite.name(), variant.name());
                    forks.addAll(run(suite, variant, round, variant.before() ? before : agent, emu, out, warmup,
                            iterations, benchmarks));
                }
            }
        }
        writeForks(out.resolve("jmh-forks.csv"), forks);
        String summary = summary(suites(before != null), forks, rounds, warmup, iterations);
        Files.writeString(out.resolve("jmh-summary.md"), summary, StandardCharsets.UTF_8);
        System.out.println();
        System.out.print(summary);
    }

    private static List<Fork> run(Suite suite, Variant variant, int round, Path agent, Path emu, Path out,
            int warmup, int iterations, String benchmarks) throws RunnerException {
        List<String> jvm = new ArrayList<>(List.of(
                "-Xms512m", "-Xmx512m",
                "-D" + GpuLibraries.EMU_PROPERTY + "=" + emu,
                "--enable-native-access=ALL-UNNAMED"));
        if (variant.agentOptions() != null) {
            jvm.add("-javaagent:" + agent + "=" + variant.agentOptions());
        }
        ChainedOptionsBuilder options = new OptionsBuilder()
                .include("^" + Pattern.quote(suite.benchmarks().getName()) + "\\.(" + benchmarks + ")$")
                .forks(1)
                .warmupIterations(warmup)
                .warmupTime(TimeValue.seconds(1))
                .measurementIterations(iterations)
                .measurementTime(TimeValue.seconds(1))
                .jvmArgs(jvm.toArray(new String[0]))
                .addProfiler(GCProfiler.class)
                .addProfiler(CpuTimeProfiler.class)
                .shouldFailOnError(true)
                .output(out.resolve("jmh-round" + round + "-" + suite.name() + "-"
                        + variant.name().replace(',', '-').replace('=', '-') + ".log").toString());
        Collection<RunResult> results = new Runner(options.build()).run();
        List<Fork> forks = new ArrayList<>();
        for (RunResult r : results) {
            String method = r.getParams().getBenchmark();
            method = method.substring(method.lastIndexOf('.') + 1);
            // the profiler counts CPU nanoseconds; the suite's unit may be microseconds
            double cpu = secondary(r, CpuTimeProfiler.NAME) / (suite.unit().startsWith("us") ? 1000.0 : 1.0);
            forks.add(new Fork(round, suite.name(), variant.name(), method, r.getPrimaryResult().getScore(),
                    cpu, secondary(r, "gc.alloc.rate.norm")));
        }
        return forks;
    }

    /** A secondary result by name; JMH before 1.36 prefixed profiler results with a middle dot. */
    private static double secondary(RunResult r, String name) {
        for (Map.Entry<String, Result> e : r.getSecondaryResults().entrySet()) {
            if (e.getKey().endsWith(name)) {
                return e.getValue().getScore();
            }
        }
        return Double.NaN;
    }

    private static void writeForks(Path file, List<Fork> forks) throws IOException {
        StringBuilder csv = new StringBuilder("round,suite,variant,benchmark,wall,cpu,bytesPerOp\n");
        for (Fork f : forks) {
            csv.append(String.format(Locale.ROOT, "%d,%s,\"%s\",%s,%.4f,%.4f,%.4f%n", f.round(), f.suite(),
                    f.variant(), f.benchmark(), f.score(), f.cpu(), f.bytesPerOp()));
        }
        Files.writeString(file, csv, StandardCharsets.UTF_8);
    }

    /** The Markdown tables of docs/performance.md: one row per benchmark and variant. */
    static String summary(List<Suite> suites, List<Fork> forks, int rounds, int warmup, int iterations) {
        StringBuilder md = new StringBuilder();
        md.append(String.format(Locale.ROOT, "JMH: %d round(s) of one fork per benchmark and variant, interleaved;"
                + " %d x 1 s warmup, %d x 1 s measurement per fork; -prof gc and CPU time of the benchmark"
                + " thread. Each cell: min / median / max over the forks. Ratios and differences: of the"
                + " medians to the run without the agent; paired: per round.%n%n", rounds, warmup, iterations));
        for (Suite suite : suites) {
            List<Fork> ofSuite = forks.stream().filter(f -> f.suite().equals(suite.name())).toList();
            if (ofSuite.isEmpty()) {
                continue;
            }
            String u = suite.unit();
            md.append("| ").append(suite.benchmarks().getSimpleName()).append(" | variant | wall ").append(u)
                    .append(" | CPU ").append(u).append(" | wall ratio | CPU ratio | CPU ratio, paired")
                    .append(" | CPU added ").append(u.substring(0, 2)).append(" | B/op | B/op added |\n");
            md.append("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
            Variant base = suite.variants().get(0);
            int d = decimals(suite);
            for (String benchmark : ofSuite.stream().map(Fork::benchmark).distinct().sorted().toList()) {
                Map<Integer, Fork> baseByRound = byRound(ofSuite, base.name(), benchmark);
                Stats baseWall = Stats.of(baseByRound.values().stream().map(Fork::score).toList());
                Stats baseCpu = Stats.of(baseByRound.values().stream().map(Fork::cpu).toList());
                Stats baseBytes = Stats.of(baseByRound.values().stream().map(Fork::bytesPerOp).toList());
                md.append(String.format(Locale.ROOT, "| %s | %s | %s | %s | | | | | %.1f | |%n", benchmark,
                        base.name(), baseWall.format(d), baseCpu.format(d), baseBytes.median()));
                for (Variant v : suite.variants().subList(1, suite.variants().size())) {
                    Map<Integer, Fork> withByRound = byRound(ofSuite, v.name(), benchmark);
                    Stats wall = Stats.of(withByRound.values().stream().map(Fork::score).toList());
                    Stats cpu = Stats.of(withByRound.values().stream().map(Fork::cpu).toList());
                    Stats bytes = Stats.of(withByRound.values().stream().map(Fork::bytesPerOp).toList());
                    List<Double> ratios = new ArrayList<>();
                    List<Double> addedBytes = new ArrayList<>();
                    for (Map.Entry<Integer, Fork> e : withByRound.entrySet()) {
                        Fork b = baseByRound.get(e.getKey());
                        if (b != null) {
                            ratios.add(e.getValue().cpu() / b.cpu());
                            addedBytes.add(e.getValue().bytesPerOp() - b.bytesPerOp());
                        }
                    }
                    md.append(String.format(Locale.ROOT, "| %s | %s | %s | %s | %.3f | %.3f | %s | %+.2f | %.1f | %+.2f |%n",
                            benchmark, v.name(), wall.format(d), cpu.format(d), wall.median() / baseWall.median(),
                            cpu.median() / baseCpu.median(), Stats.of(ratios).format(3),
                            cpu.median() - baseCpu.median(), bytes.median(), Stats.of(addedBytes).median()));
                }
            }
            md.append('\n');
        }
        return md.toString();
    }

    private static int decimals(Suite suite) {
        return suite.unit().startsWith("ns") ? 1 : 2;
    }

    private static Map<Integer, Fork> byRound(List<Fork> forks, String variant, String benchmark) {
        Map<Integer, Fork> m = new LinkedHashMap<>();
        for (Fork f : forks) {
            if (f.variant().equals(variant) && f.benchmark().equals(benchmark)) {
                m.put(f.round(), f);
            }
        }
        return m;
    }

    static Map<String, String> parse(String[] args) {
        Map<String, String> m = new LinkedHashMap<>();
        for (int i = 0; i < args.length; i++) {
            if (!args[i].startsWith("--") || i + 1 >= args.length) {
                throw new IllegalArgumentException("expected --key value pairs, got " + String.join(" ", args));
            }
            m.put(args[i].substring(2), args[++i]);
        }
        return m;
    }

    static String required(Map<String, String> opts, String key) {
        String v = opts.get(key);
        if (v == null) {
            throw new IllegalArgumentException("missing --" + key);
        }
        return v;
    }
}
