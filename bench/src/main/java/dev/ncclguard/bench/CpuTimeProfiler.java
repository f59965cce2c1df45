package dev.ncclguard.bench;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import org.openjdk.jmh.infra.BenchmarkParams;
import org.openjdk.jmh.infra.IterationParams;
import org.openjdk.jmh.profile.InternalProfiler;
import org.openjdk.jmh.results.AggregationPolicy;
import org.openjdk.jmh.results.IterationResult;
import org.openjdk.jmh.results.Result;
import org.openjdk.jmh.results.ScalarResult;

/**
 * CPU time of the benchmark threads per operation ({@code cpu.time.norm}, ns/op). On a machine
 * shared with other work, wall time per operation also counts the time the thread waited for a
 * core; the CPU time the calling thread spends per call does not, and it is where the agent's
 * cost lands (the agent adds no thread). {@code -prof dev.ncclguard.bench.CpuTimeProfiler}.
 */
public final class CpuTimeProfiler implements InternalProfiler {
    public static final String NAME = "cpu.time.norm";

    private final ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    private long[] ids = new long[0];
    private long before;

    @Override
    public String getDescription() {
        return "CPU time of the benchmark threads per operation";
    }

    @Override
    public void beforeIteration(BenchmarkParams benchmarkParams, IterationParams iterationParams) {
        ids = workerIds();
        before = cpuTime(ids);
    }

    @Override
    public Collection<? extends Result> afterIteration(BenchmarkParams benchmarkParams,
            IterationParams iterationParams, IterationResult result) {
        long spent = cpuTime(ids) - before;
        long ops = result.getMetadata().getAllOps();
        List<Result> results = new ArrayList<>();
        if (ops > 0 && ids.length > 0) {
            results.add(new ScalarResult(NAME, (double) spent / ops, "ns/op", AggregationPolicy.AVG));
        }
        return results;
    }

    /** JMH names its benchmark threads "...-jmh-worker-N"; they live across a fork's iterations. */
    private long[] workerIds() {
        List<Long> found = new ArrayList<>();
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (t.getName().contains("jmh-worker")) {
                found.add(t.getId());
            }
        }
        return found.stream().mapToLong(Long::longValue).toArray();
    }

    private long cpuTime(long[] of) {
        long sum = 0;
        for (long id : of) {
            long t = threads.getThreadCpuTime(id);
            if (t > 0) {
                sum += t;
            }
        }
        return sum;
    }
}
