package dev.ncclguard.cleanup;

import dev.ncclguard.catalog.ExitCalls;
import dev.ncclguard.catalog.Kind;
import dev.ncclguard.catalog.Status;
import dev.ncclguard.track.HandleView;
import dev.ncclguard.track.NativeAccess;
import java.util.AbstractMap;
import java.util.Collections;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * Asks the library, through the instance the application used, whether the work of each leaked
 * event and stream is still in flight (cudaEventQuery / cudaStreamQuery). The queries run on a
 * daemon thread; the caller waits at most until {@code deadlineNanos}, and what was not answered
 * by then stays unknown (absent from the answer).
 *
 * <p>An event last recorded on a live, ordinary stream ({@link HandleView#recordedOn()}) is
 * complete once that stream is idle: one cudaStreamQuery answers for all of that stream's events,
 * and their answers are that stream's, not an entry each. The events of a stream still busy are
 * asked one by one, as are the others. What that saves: docs/performance.md, "Cleanup's code at exit".
 */
public final class ExitProbe {
    /** How long past the deadline the caller waits for a prober that is not stuck in a call to stop. */
    private static final long STOP_GRACE_NANOS = TimeUnit.MILLISECONDS.toNanos(20);

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
        Prober prober = new Prober(leaks, deadlineNanos);
        Thread thread = new Thread(prober, "ncclguard-exit-probe");
        thread.setDaemon(true);
        thread.start();
        try {
            // the prober stops asking at the deadline; one that is late to start or between two
            // calls then ends on its own: only one inside a call is left hanging
            long waitNanos = deadlineNanos + STOP_GRACE_NANOS - System.nanoTime();
            if (waitNanos > 0) {
                TimeUnit.NANOSECONDS.timedJoin(thread, waitNanos);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        boolean alive = thread.isAlive();
        return new Result(prober.answers(alive), alive && prober.inCall);
    }

    private static final class Prober implements Runnable {
        private static final int UNKNOWN = Integer.MIN_VALUE;

        private final List<HandleView> leaks;
        private final long deadlineNanos;
        // Written by the prober under this; read once it ended (join orders its writes), or copied under this.
        private final Map<HandleView, Boolean> byHandle = new IdentityHashMap<>();
        /** cudaStreamQuery's status per library and stream, asked once for the events recorded on it. */
        private final Map<NativeAccess, Map<Long, Integer>> streams = new IdentityHashMap<>();
        private NativeAccess lastAccess;
        private long lastStream;
        private int lastStatus;
        /** A query is in progress: the library has not returned yet. */
        volatile boolean inCall;

        Prober(List<HandleView> leaks, long deadlineNanos) {
            this.leaks = leaks;
            this.deadlineNanos = deadlineNanos;
        }

        @Override
        public void run() {
            for (HandleView view : leaks) {
                if (System.nanoTime() - deadlineNanos > 0) {
                    return; // the rest stays unknown
                }
                probe(view); // the work per handle in a method of its own (docs/performance.md, "Cleanup's code at exit")
            }
        }

        private void probe(HandleView view) {
            if ((view.kind() != Kind.EVENT && view.kind() != Kind.STREAM) || view.access() == null) {
                return; // only events and streams have work to be pending
            }
            if (view.kind() == Kind.STREAM) {
                answer(view, call(view.access(), ExitCalls.STREAM_QUERY, view.handle()));
                return;
            }
            if (view.recordedOn() != 0 && streamStatus(view.access(), view.recordedOn()) == Status.CUDA_SUCCESS) {
                return; // answered by its stream
            }
            answer(view, call(view.access(), ExitCalls.EVENT_QUERY, view.handle()));
        }

        private void answer(HandleView view, int status) {
            if (status == Status.CUDA_SUCCESS || status == Status.CUDA_ERROR_NOT_READY) {
                synchronized (this) {
                    byHandle.put(view, status == Status.CUDA_ERROR_NOT_READY);
                }
            }
        }

        private int streamStatus(NativeAccess access, long stream) {
            if (access == lastAccess && stream == lastStream) {
                return lastStatus; // the usual run of events recorded on one stream
            }
            Integer status = statusOf(streams, access, stream);
            if (status == null) {
                status = call(access, ExitCalls.STREAM_QUERY, stream);
                synchronized (this) {
                    Map<Long, Integer> statuses = streams.get(access);
                    if (statuses == null) {
                        statuses = new HashMap<>();
                        streams.put(access, statuses);
                    }
                    statuses.put(stream, status);
                }
            }
            lastAccess = access;
            lastStream = stream;
            lastStatus = status;
            return status;
        }

        private int call(NativeAccess access, String query, long handle) {
            inCall = true;
            try {
                return access.call(query, handle);
            } catch (RuntimeException e) {
                return UNKNOWN; // unknown: the report leaves stillPending out for this handle
            } finally {
                inCall = false;
            }
        }

        /** @param running the prober may still add answers: copies; else its maps as they are */
        Map<HandleView, Boolean> answers(boolean running) {
            if (!running) {
                return new Answers(leaks, byHandle, streams);
            }
            synchronized (this) {
                Map<NativeAccess, Map<Long, Integer>> s = new IdentityHashMap<>();
                for (Map.Entry<NativeAccess, Map<Long, Integer>> e : streams.entrySet()) {
                    s.put(e.getKey(), new HashMap<>(e.getValue()));
                }
                return new Answers(leaks, new IdentityHashMap<>(byHandle), s);
            }
        }
    }

    private static Integer statusOf(Map<NativeAccess, Map<Long, Integer>> streams, NativeAccess access, long stream) {
        Map<Long, Integer> statuses = streams.get(access);
        return statuses == null ? null : statuses.get(stream);
    }

    /**
     * The probe's answers as a map: a handle's own, or for an event recorded on a stream found idle,
     * "not pending". Immutable; its lookups are meant for one thread (the report's).
     */
    private static final class Answers extends AbstractMap<HandleView, Boolean> {
        private final List<HandleView> leaks;
        private final Map<HandleView, Boolean> byHandle;
        private final Map<NativeAccess, Map<Long, Integer>> streams;
        private NativeAccess lastAccess;
        private long lastStream;
        private boolean lastIdle;
        private Set<Entry<HandleView, Boolean>> entries;

        Answers(List<HandleView> leaks, Map<HandleView, Boolean> byHandle,
                Map<NativeAccess, Map<Long, Integer>> streams) {
            this.leaks = leaks;
            this.byHandle = byHandle;
            this.streams = streams;
        }

        @Override
        public Boolean get(Object key) {
            if (!(key instanceof HandleView view)) {
                return null;
            }
            Boolean own = byHandle.get(view);
            if (own != null || view.kind() != Kind.EVENT || view.recordedOn() == 0 || view.access() == null) {
                return own;
            }
            return idle(view.access(), view.recordedOn()) ? Boolean.FALSE : null;
        }

        @Override
        public boolean containsKey(Object key) {
            return get(key) != null;
        }

        private boolean idle(NativeAccess access, long stream) {
            if (access != lastAccess || stream != lastStream) {
                Integer status = statusOf(streams, access, stream);
                lastAccess = access;
                lastStream = stream;
                lastIdle = status != null && status == Status.CUDA_SUCCESS;
            }
            return lastIdle;
        }

        @Override
        public Set<Entry<HandleView, Boolean>> entrySet() {
            if (entries == null) {
                Map<HandleView, Boolean> all = new IdentityHashMap<>();
                for (HandleView view : leaks) {
                    Boolean answer = get(view);
                    if (answer != null) {
                        all.put(view, answer);
                    }
                }
                entries = Collections.unmodifiableMap(all).entrySet();
            }
            return entries;
        }
    }
}
