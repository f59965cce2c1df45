package dev.ncclguard.cleanup;

import dev.ncclguard.catalog.ExitCalls;
import dev.ncclguard.track.NativeAccess;
import dev.ncclguard.track.NoCudaLibrary;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * Every native call of cleanup, counted while it is in: one still in at the end was left hanging.
 * Calls run on daemon threads ({@link #callAsync}) and are only ever waited for with a bound.
 */
final class NativeCalls {
    private final AtomicInteger inNative = new AtomicInteger();
    private final CudaRuntime cudaRuntime;

    NativeCalls(CudaRuntime cudaRuntime) {
        this.cudaRuntime = cudaRuntime;
    }

    void setDevice(int device) {
        NativeAccess cudart = cudaRuntime.cudart();
        if (cudart == null || device < 0) {
            return;
        }
        // Best effort: NCCL switches to the communicator's device itself; this only spares it
        // from running on whatever device a fresh thread starts with.
        callStatus(cudart, ExitCalls.SET_DEVICE, device);
    }

    /** The call's status, or Integer.MIN_VALUE when it threw (no such symbol, bad library). */
    int callStatus(NativeAccess access, String symbol, Object... args) {
        try {
            return call(access, symbol, args);
        } catch (Throwable t) {
            return Integer.MIN_VALUE;
        }
    }

    /** {@link #callStatus} through the leak's own access, keeping why a call could not be made. */
    int callNoting(LeakProgress item, String symbol, Object... args) {
        try {
            return call(item.view.access(), symbol, args);
        } catch (NoCudaLibrary t) {
            item.callFailure = t.wording("release", item.view.kind().word(), item.view.handle());
            return Integer.MIN_VALUE;
        } catch (Throwable t) {
            item.callFailure = String.valueOf(t);
            return Integer.MIN_VALUE;
        }
    }

    /** Every native call of cleanup goes through here, so that one that never returns is known. */
    int call(NativeAccess access, String symbol, Object... args) {
        inNative.incrementAndGet();
        try {
            return access.call(symbol, args);
        } finally {
            inNative.decrementAndGet();
        }
    }

    <T> Future<T> callAsync(String threadName, Callable<T> work) {
        CompletableFuture<T> result = new CompletableFuture<>();
        Thread thread = new Thread(() -> {
            try {
                result.complete(work.call());
            } catch (Throwable t) {
                result.completeExceptionally(t);
            }
        }, threadName);
        // A native call that never returns must not keep the JVM from exiting.
        thread.setDaemon(true);
        thread.start();
        return result;
    }

    /** Waits until the nanoTime {@code until} for the calls still in to return. */
    void awaitReturns(long until) {
        while (inNative.get() > 0 && until - System.nanoTime() > 0) {
            LockSupport.parkNanos(Cleanup.FIRST_POLL_SLEEP_NANOS);
        }
    }

    /** Whether a call is still in now. */
    boolean anyIn() {
        return inNative.get() > 0;
    }

    /** Waits for {@code future} until the nanoTime {@code until}; answers whether it completed. */
    static boolean await(Future<?> future, long until) {
        long left = until - System.nanoTime();
        try {
            if (left <= 0) {
                return future.isDone();
            }
            future.get(left, TimeUnit.NANOSECONDS);
            return true;
        } catch (TimeoutException e) {
            return false;
        } catch (ExecutionException e) {
            return true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return future.isDone();
        }
    }

    static long millisSince(long startedNanos) {
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startedNanos);
    }
}
