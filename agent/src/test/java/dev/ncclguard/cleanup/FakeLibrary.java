package dev.ncclguard.cleanup;

import dev.ncclguard.track.NativeAccess;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

/**
 * A scripted NCCL or CUDA runtime: each symbol answers what the test says (0 by default), every
 * call is logged with its thread and a sequence number shared by all fakes of one test, and a
 * hanging call blocks until the test ends.
 */
final class FakeLibrary implements NativeAccess {
    record Call(long seq, String library, String symbol, List<Object> args, String thread) {
        Object arg(int i) {
            return args.get(i);
        }
    }

    /** The calls of every fake in one test, in the order they were made. */
    static final class CallLog {
        private final List<Call> calls = new ArrayList<>();
        private final CountDownLatch hangsReleased = new CountDownLatch(1);

        synchronized Call add(String library, String symbol, Object[] args) {
            Call call = new Call(calls.size(), library, symbol, Arrays.asList(args),
                    Thread.currentThread().getName());
            calls.add(call);
            return call;
        }

        synchronized List<Call> calls() {
            return List.copyOf(calls);
        }

        synchronized List<Call> calls(String symbol) {
            return calls.stream().filter(c -> c.symbol().equals(symbol)).toList();
        }

        void releaseHangs() {
            hangsReleased.countDown();
        }

        int hang() {
            try {
                hangsReleased.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return 0;
        }
    }

    private final String name;
    private final CallLog log;
    private final Map<String, Function<Object[], Integer>> answers = new ConcurrentHashMap<>();

    FakeLibrary(String name, CallLog log) {
        this.name = name;
        this.log = log;
    }

    FakeLibrary answer(String symbol, int status) {
        return answer(symbol, args -> status);
    }

    FakeLibrary answer(String symbol, Function<Object[], Integer> answer) {
        answers.put(symbol, answer);
        return this;
    }

    /** {@code symbol} answers {@code first} for its first {@code times} calls, then {@code after}. */
    FakeLibrary answerFor(String symbol, int times, int first, int after) {
        AtomicInteger calls = new AtomicInteger();
        return answer(symbol, args -> calls.getAndIncrement() < times ? first : after);
    }

    FakeLibrary hang(String symbol) {
        return answer(symbol, args -> log.hang());
    }

    FakeLibrary missing(String symbol) {
        return answer(symbol, args -> {
            throw new UnsatisfiedLinkError("Error looking up function '" + symbol + "'");
        });
    }

    @Override
    public String library() {
        return name;
    }

    @Override
    public int call(String symbol, Object... args) {
        log.add(name, symbol, args);
        Function<Object[], Integer> answer = answers.get(symbol);
        return answer == null ? 0 : answer.apply(args);
    }
}
