package dev.ncclguard.bridge.ffm;

import dev.ncclguard.bootstrap.state.FfmSink;
import dev.ncclguard.bridge.ArrayArgs;
import dev.ncclguard.bridge.BindingValues;
import dev.ncclguard.bridge.CallProtocol;
import dev.ncclguard.catalog.Catalog;
import dev.ncclguard.catalog.NativeFunction;
import dev.ncclguard.log.Log;
import dev.ncclguard.track.NativeAccess;
import dev.ncclguard.track.Tracker;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The FFM bridge (java.lang.foreign, JDK 22+): a downcall handle made for the address of an NCCL
 * or CUDA runtime function is replaced by one that tells the tracker around each call. The
 * address is named by the symbol lookups seen before (SymbolLookup.find). Compiled for Java 17:
 * FFM types are reached through method handles only.
 */
public final class FfmBridge implements FfmSink {
    public static final String NAME = "ffm";
    private static final MethodHandle INVOKE;

    static {
        try {
            INVOKE = MethodHandles.lookup().findVirtual(FfmBridge.class, "invoke", MethodType.methodType(
                    Object.class, NativeFunction.class, MethodHandle.class, Object[].class));
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private static final ClassValue<MethodHandle> ADDRESS = new ClassValue<>() {
        @Override
        protected MethodHandle computeValue(Class<?> type) {
            try {
                Class<?> segment = Class.forName("java.lang.foreign.MemorySegment", false, null);
                return MethodHandles.publicLookup().findVirtual(segment, "address", MethodType.methodType(long.class))
                        .asType(MethodType.methodType(long.class, Object.class));
            } catch (ReflectiveOperationException e) {
                return null;
            }
        }
    };

    private final CallProtocol calls;
    /** Function addresses found by symbol lookups: only catalog functions are kept. */
    private final Map<Long, NativeFunction> functions = new ConcurrentHashMap<>();
    /** The application's own (unwrapped) downcall handles by symbol, for exit-time calls. */
    private final Map<String, MethodHandle> handles = new ConcurrentHashMap<>();
    private final NativeAccess access = new FfmAccess(handles);

    public FfmBridge(Tracker tracker) {
        this.calls = new CallProtocol(tracker, "ffm", false);
    }

    @Override
    public void symbol(String name, long address) {
        NativeFunction fn = Catalog.lookup(name);
        if (fn != null) {
            functions.put(address, fn);
        }
    }

    @Override
    public Object downcall(Object handle, Object symbol) {
        if (functions.isEmpty() || !(handle instanceof MethodHandle) || symbol == null) {
            return handle;
        }
        try {
            MethodHandle address = ADDRESS.get(symbol.getClass());
            NativeFunction fn = address == null ? null : functions.get((long) address.invokeExact(symbol));
            if (fn == null) {
                return handle;
            }
            MethodHandle target = (MethodHandle) handle;
            handles.put(fn.symbol(), target);
            return wrap(fn, target);
        } catch (Throwable t) {
            Log.once("ffm-wrap", "cannot track an FFM downcall handle, it runs untracked: " + t);
            return handle;
        }
    }

    /** {@code target} of the same type, its arguments collected into an array for {@link #invoke}. */
    private MethodHandle wrap(NativeFunction fn, MethodHandle target) {
        MethodType type = target.type();
        int n = type.parameterCount();
        MethodHandle spread = target.asSpreader(Object[].class, n)
                .asType(MethodType.methodType(Object.class, Object[].class));
        MethodHandle call = MethodHandles.insertArguments(INVOKE.bindTo(this), 0, fn, spread);
        return call.asCollector(Object[].class, n).asType(type);
    }

    /** One tracked downcall: what the function returns, or what it throws, passes as is. */
    private Object invoke(NativeFunction fn, MethodHandle spread, Object[] args) throws Throwable {
        long token;
        ArrayArgs view = ArrayArgs.of(args);
        try {
            token = calls.enter(fn, view);
        } finally {
            view.clear();
        }
        CallProtocol.parkIfClaimed(token);
        Object result = (Object) spread.invokeExact(args);
        view = ArrayArgs.of(args);
        try {
            calls.exit(fn, view, BindingValues.status(result), token, NAME, access);
        } finally {
            view.clear();
        }
        return result;
    }

    /** Exit-time calls through the application's own downcall handles, unwrapped. */
    private static final class FfmAccess implements NativeAccess {
        private final Map<String, MethodHandle> handles;

        FfmAccess(Map<String, MethodHandle> handles) {
            this.handles = handles;
        }

        @Override
        public String library() {
            return "FFM downcall handles";
        }

        @Override
        public int call(String symbol, Object... args) {
            MethodHandle handle = handles.get(symbol);
            if (handle == null) {
                throw new IllegalStateException("the application made no downcall handle for " + symbol);
            }
            MethodType type = handle.type();
            if (type.parameterCount() != args.length) {
                throw new IllegalStateException(symbol + " takes " + type.parameterCount() + " arguments");
            }
            try {
                Object[] values = new Object[args.length];
                for (int i = 0; i < args.length; i++) {
                    Class<?> p = type.parameterType(i);
                    if (args[i] instanceof byte[] struct) {
                        values[i] = copy(p, struct);
                        continue;
                    }
                    Number v = (Number) args[i];
                    if (p == int.class) {
                        values[i] = v.intValue();
                    } else if (p == long.class) {
                        values[i] = v.longValue();
                    } else {
                        values[i] = p.getMethod("ofAddress", long.class).invoke(null, v.longValue());
                    }
                }
                Object result = handle.invokeWithArguments(values);
                return result instanceof Number ? ((Number) result).intValue() : 0;
            } catch (RuntimeException | Error e) {
                throw e;
            } catch (Throwable t) {
                throw new IllegalStateException("cannot call " + symbol + ": " + t, t);
            }
        }

        /** A struct passed by pointer: a native copy of its bytes (an automatic arena's, freed once unreachable). */
        private static Object copy(Class<?> segment, byte[] struct) throws ReflectiveOperationException {
            Class<?> arenas = Class.forName("java.lang.foreign.Arena", false, null);
            Object arena = arenas.getMethod("ofAuto").invoke(null);
            Object memory = arenas.getMethod("allocate", long.class).invoke(arena, (long) struct.length);
            ((java.nio.ByteBuffer) segment.getMethod("asByteBuffer").invoke(memory)).put(struct);
            return memory;
        }

        @Override
        public String toString() {
            return library();
        }
    }
}
