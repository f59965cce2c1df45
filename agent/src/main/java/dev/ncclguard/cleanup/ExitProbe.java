package dev.ncclguard.cleanup;

import dev.ncclguard.track.HandleView;
import dev.ncclguard.track.Kind;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * Asks the library, through the instance the application used, whether the work of each leaked
 * event and stream is still in flight (cudaEventQuery / cudaStreamQuery). The queries run on a
 * daemon thread; the caller waits at most until {@code deadlineNanos}, and what was not answered
 * by then stays unknown (absent from the answer).
 */
public final class ExitProbe {
    private ExitProbe() {
    }

    public static Map<HandleView, Boolean> stillPending(List<HandleView> leaks, long deadlineNanos) {
        return probe(leaks, deadlineNanos).stillPending();
    }

    /**
     * @param stillPending per event and stream, whether its work was in flight; absent: unknown
     * @param leftHanging  a query had not returned by the deadline: a thread is still inside CUDA
     */
    public record Result(Map<HandleView, Boolean> stillPending, boolean leftHanging) {
    }

    /** Like {@link #stillPending}, and says whether a query was left hanging. */
    public static Result probe(List<HandleView> leaks, long deadlineNanos) {
        Map<HandleView, Boolean> answers = new ConcurrentHashMap<>();
        Thread prober = new Thread(() -> {
            for (HandleView view : leaks) {
                if (view.kind() == Kind.COMM || view.access() == null) {
                    continue;
                }
                String query = view.kind() == Kind.EVENT ? "cudaEventQuery" : "cudaStreamQuery";
                try {
                    int status = view.access().call(query, view.handle());
                    if (status == Cleanup.CUDA_SUCCESS || status == Cleanup.CUDA_ERROR_NOT_READY) {
                        answers.put(view, status == Cleanup.CUDA_ERROR_NOT_READY);
                    }
                } catch (RuntimeException e) {
                    // unknown: the report leaves stillPending out for this handle
                }
            }
        }, "ncclguard-exit-probe");
        prober.setDaemon(true);
        prober.start();
        try {
            long waitNanos = deadlineNanos - System.nanoTime();
            if (waitNanos > 0) {
                TimeUnit.NANOSECONDS.timedJoin(prober, waitNanos);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return new Result(Map.copyOf(answers), prober.isAlive());
    }
}
