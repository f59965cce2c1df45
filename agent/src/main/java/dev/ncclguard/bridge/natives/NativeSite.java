package dev.ncclguard.bridge.natives;

import dev.ncclguard.bootstrap.JnaHandle;
import dev.ncclguard.bridge.BindingValues;
import dev.ncclguard.bridge.JnaHandles;
import dev.ncclguard.catalog.NativeFunction;
import dev.ncclguard.config.Bindings;
import dev.ncclguard.track.NativeAccess;
import dev.ncclguard.weave.Slots;
import java.lang.ref.WeakReference;
import java.util.Arrays;
import java.util.TreeSet;
import net.bytebuddy.jar.asm.Type;

/**
 * One wrapped native method: what it means to the tracker and how to call it again at exit.
 * Made when its class is defined, before the class exists, so it names the class and loader.
 */
public final class NativeSite {
    /** The position of a function's role that is the method's return value (bindings: handle=return). */
    static final int RESULT = Bindings.RESULT;
    private static final String JNA_POINTER = "Lcom/sun/jna/Pointer;";

    final int id;
    /** The catalog function, its positions being Java argument indexes (or {@link #RESULT}). */
    final NativeFunction fn;
    final String bridge;
    /** The class's binary name (a.b.C). */
    final String owner;
    private final WeakReference<ClassLoader> loader;
    final String method;
    final String descriptor;
    final boolean isStatic;
    final int paramCount;
    /** The return type's descriptor letter: I (and Z, B, C, S), J, F, D, V, or L for any reference. */
    final char returnKind;
    /** C argument position to Java argument index, -1 where the method has none; for exit-time calls. */
    final int[] cToJava;
    /** The Java arguments the wrapper hands over, and how. */
    final Slots slots;

    /** Per slot: handed over as a long (true), or a reference. */
    final boolean[] slotIsWord;
    /** Whether any slot is a reference. */
    final boolean passesReferences;
    /** Java argument index to its slot, -1 for arguments the function does not read. */
    private final int[] slotOfArg;
    /**
     * Per slot, the reader of the reference class last seen there (racy; each entry is immutable):
     * a ClassValue lookup per argument costs more than the rest of decoding. It holds that class,
     * as {@link #receiver} holds an instance of the site's own loader.
     */
    private final ReaderOf[] readers;
    /**
     * Per slot, the reader of the handle a reference there holds, for the carried-record hooks:
     * for a JNA Pointer or PointerType the class JnaHandles generates next to JNA (two instanceof
     * checks and a static call, inlined), else one over {@link #reader}. Racy, as {@link #readers}.
     */
    private final JnaHandle[] handleReaders;
    /** The exit-time access to the library behind this method; made on first need. */
    volatile NativeAccess access;
    /**
     * The first receiver of an instance method, for exit-time calls. Held strongly: at exit the
     * application's own references are gone, and a binding object is one small instance per class.
     */
    volatile Object receiver;
    /**
     * Whether the native was renamed under the prefix (wrapped at class load); false for one of a
     * class loaded before an attach, reached through its call sites, which keeps its name.
     */
    volatile boolean renamed = true;

    /** The native keeps its name: its class was loaded before an attach, its calls are reached at their call sites. */
    public void reachedThroughCallSites() {
        renamed = false;
    }

    NativeSite(int id, NativeFunction fn, String bridge, String owner, ClassLoader loader, String method,
               String descriptor, boolean isStatic, int paramCount, char returnKind, int[] cToJava) {
        this.id = id;
        this.fn = fn;
        this.bridge = bridge;
        this.owner = owner;
        this.loader = loader == null ? null : new WeakReference<>(loader);
        this.method = method;
        this.descriptor = descriptor;
        this.isStatic = isStatic;
        this.paramCount = paramCount;
        this.returnKind = returnKind;
        this.cToJava = cToJava;
        Type[] params = Type.getArgumentTypes(descriptor);
        this.slots = slots(fn, params);
        if (slots == null) { // no catalog function has more; the class stays unwrapped
            throw new IllegalArgumentException(fn.symbol() + " reads more than " + Slots.COUNT + " arguments");
        }
        int n = slots.args().length;
        this.slotIsWord = new boolean[n];
        this.slotOfArg = new int[params.length];
        Arrays.fill(slotOfArg, -1);
        boolean references = false;
        for (int k = 0; k < n; k++) {
            slotIsWord[k] = slots.kinds()[k] != Slots.REFERENCE;
            references |= !slotIsWord[k];
            slotOfArg[slots.args()[k]] = k;
        }
        this.passesReferences = references;
        this.readers = new ReaderOf[n];
        this.handleReaders = new JnaHandle[n];
    }

    /**
     * The slots of a wrapper of {@code fn} (positions in Java argument indexes): every argument at
     * a position of one of its roles, ascending; null if more than {@link Slots#COUNT}.
     */
    static Slots slots(NativeFunction fn, Type[] params) {
        int[] roles = fn.positions();
        TreeSet<Integer> used = new TreeSet<>();
        for (int p : roles) {
            if (p >= 0 && p < params.length && kind(fn, p, params[p]) != Slots.NOT_PASSED) {
                used.add(p);
            }
        }
        if (used.size() > Slots.COUNT) {
            return null;
        }
        int[] args = used.stream().mapToInt(Integer::intValue).toArray();
        int[] kinds = new int[args.length];
        for (int k = 0; k < args.length; k++) {
            kinds[k] = kind(fn, args[k], params[args[k]]);
        }
        // a handle a bindings file maps to the result is read after the call: left to CallArgs
        boolean carried = fn.change().onHandles() && fn.handle() != RESULT && fn.stream() != RESULT;
        return new Slots(args, kinds, carried, indexOf(args, fn.handle()), indexOf(args, fn.stream()));
    }

    private static int indexOf(int[] args, int position) {
        for (int k = 0; k < args.length; k++) {
            if (args[k] == position) {
                return k;
            }
        }
        return -1;
    }

    /**
     * How Java argument {@code index} of type {@code t} goes into a slot: integers as a long,
     * references as they are, except a JNA Pointer that only hands over a handle by value, whose
     * address the wrapper reads inline (a method handle per call costs more). A boolean, char,
     * float or double is never a handle, rank or count: not passed, so it reads as 0 (as their
     * boxes did).
     */
    private static int kind(NativeFunction fn, int index, Type t) {
        switch (t.getSort()) {
            case Type.INT: case Type.SHORT: case Type.BYTE: case Type.LONG:
                return Slots.WORD;
            case Type.OBJECT:
                return t.getDescriptor().equals(JNA_POINTER) && onlyHandlesByValue(fn, index) ? Slots.ADDRESS : Slots.REFERENCE;
            case Type.ARRAY:
                return Slots.REFERENCE;
            default:
                return Slots.NOT_PASSED;
        }
    }

    /**
     * Whether every role at {@code index} is a handle passed by value (the handle of all but the
     * creations, which write it through a pointer; a stream, an event, a parent communicator).
     */
    private static boolean onlyHandlesByValue(NativeFunction fn, int index) {
        int[] others = {fn.rank(), fn.nranks(), fn.uniqueId(), fn.device(), fn.color(), fn.key(), fn.count(),
            fn.rankList()};
        for (int p : others) {
            if (p == index) {
                return false;
            }
        }
        return index != fn.handle() || !fn.change().creates();
    }


    /** The slot holding Java argument {@code index}, or -1. */
    int slotOf(int index) {
        int[] map = slotOfArg;
        return index >= 0 && index < map.length ? map[index] : -1;
    }

    /** The reader of {@code arg}, a reference in slot {@code k}: cached per slot, the class rarely changes. */
    BindingValues.Reader reader(int k, Object arg) {
        Class<?> type = arg.getClass();
        ReaderOf cached = readers[k];
        if (cached == null || cached.type != type) {
            cached = new ReaderOf(type, BindingValues.readerOf(type));
            readers[k] = cached;
        }
        return cached.reader;
    }

    /**
     * The handle a carried-record hook got in slot {@code k} as {@code (w, r)}: {@code w} for a
     * number or an address the wrapper read, else what reference {@code r} holds (0 if none).
     */
    long handleIn(int k, long w, Object r) {
        if (r == null || k < 0) {
            return w;
        }
        JnaHandle h = handleReaders[k];
        if (h == null) {
            h = JnaHandles.forArgument(r);
            if (h == JnaHandles.OTHER) { // JavaCPP, a relocated JNA: this slot's cached reader
                h = new JnaHandle() {
                    @Override
                    public long of(Object arg) {
                        return BindingValues.handle(reader(k, arg), arg);
                    }
                };
            }
            handleReaders[k] = h;
        }
        return h.of(r);
    }

    /** A reader and the class it reads; final fields, so a racy publication is safe. */
    private static final class ReaderOf {
        final Class<?> type;
        final BindingValues.Reader reader;

        ReaderOf(Class<?> type, BindingValues.Reader reader) {
            this.type = type;
            this.reader = reader;
        }
    }

    /** Whether this site's class was defined by {@code other} (null: the boot loader). */
    boolean definedBy(ClassLoader other) {
        return loader == null ? other == null : loader.get() == other;
    }

    ClassLoader loader() {
        return loader == null ? null : loader.get();
    }

    boolean handleIsResult() {
        return fn.handle() == RESULT;
    }

    /**
     * The C status of a call that returned {@code result}: an int (or long) result that is not the
     * handle is the status; a handle returned as the result succeeded when not 0; any other method
     * that returned (rather than threw) succeeded.
     */
    int status(long result) {
        if (handleIsResult()) {
            return result != 0 ? 0 : -1;
        }
        return returnKind == 'I' || returnKind == 'J' ? (int) result : 0;
    }

    /** C positions for a method named as the C function: the Java arguments, one to one. */
    static int[] identity(int paramCount) {
        int[] map = new int[paramCount];
        Arrays.setAll(map, i -> i);
        return map;
    }

    public int id() {
        return id;
    }

    /** The arguments the wrapper, or a rewritten call site, hands the hooks. */
    public Slots slots() {
        return slots;
    }

    @Override
    public String toString() {
        return owner + "." + method + descriptor + " (" + fn.symbol() + ", " + bridge + ")";
    }
}
