package dev.ncclguard.live;

import dev.ncclguard.catalog.Catalog;
import dev.ncclguard.catalog.NativeFunction;
import dev.ncclguard.config.Options;
import dev.ncclguard.track.CallArgs;
import dev.ncclguard.track.Tracker;
import java.time.Instant;
import java.util.HashMap;
import java.util.Map;

/** Feeds a tracker the calls a bridge would, for the live view's tests; arguments by C position. */
final class Calls {
    static final String BRIDGE = "test-bridge";

    final Tracker tracker = new Tracker();
    final LiveMonitor live = LiveMonitor.listenTo(tracker);

    /** An agent state over this tracker, as an attach at {@code attachedAt} (null: started with the JVM) makes. */
    AgentState state(String options, Instant attachedAt) {
        return new AgentState(tracker, Options.parse(options, Map.of(), Map.of()), attachedAt, Map.of(), java.util.List.of());
    }

    void initRank(long comm, int nranks, int rank) {
        byte[] id = new byte[Catalog.UNIQUE_ID_BYTES];
        id[0] = 7;
        call("ncclCommInitRank", new Args().out(0, comm).i(1, nranks).bytes(2, id).i(3, rank));
    }

    void destroy(long comm) {
        call("ncclCommDestroy", new Args().handle(0, comm));
    }

    void eventCreate(long event) {
        call("cudaEventCreate", new Args().out(0, event));
    }

    void record(long event, long stream) {
        call("cudaEventRecord", new Args().handle(0, event).handle(1, stream));
    }

    void eventDestroy(long event) {
        call("cudaEventDestroy", new Args().handle(0, event));
    }

    private void call(String symbol, Args a) {
        NativeFunction fn = Catalog.lookup(symbol);
        tracker.exit(fn, a, 0, tracker.enter(fn, a), BRIDGE, null);
    }

    static final class Args implements CallArgs {
        private final Map<Integer, Long> handles = new HashMap<>();
        private final Map<Integer, Long> outs = new HashMap<>();
        private final Map<Integer, Integer> ints = new HashMap<>();
        private final Map<Integer, byte[]> bytes = new HashMap<>();

        Args handle(int i, long v) {
            handles.put(i, v);
            return this;
        }

        Args out(int i, long v) {
            outs.put(i, v);
            return this;
        }

        Args i(int i, int v) {
            ints.put(i, v);
            return this;
        }

        Args bytes(int i, byte[] v) {
            bytes.put(i, v);
            return this;
        }

        @Override
        public long handle(int index) {
            return handles.getOrDefault(index, 0L);
        }

        @Override
        public long handleOut(int index) {
            return outs.getOrDefault(index, 0L);
        }

        @Override
        public long handleOut(int index, int i) {
            return 0;
        }

        @Override
        public int intArg(int index) {
            return ints.getOrDefault(index, 0);
        }

        @Override
        public int intArray(int index, int i, int fallback) {
            return fallback;
        }

        @Override
        public byte[] bytes(int index, int length) {
            byte[] b = bytes.get(index);
            return b == null || b.length < length ? null : java.util.Arrays.copyOf(b, length);
        }
    }
}
