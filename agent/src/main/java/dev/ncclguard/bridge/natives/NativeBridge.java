package dev.ncclguard.bridge.natives;

import dev.ncclguard.bootstrap.state.NativeSink;
import dev.ncclguard.bridge.CallProtocol;
import dev.ncclguard.catalog.Catalog;
import dev.ncclguard.catalog.NativeFunction;
import dev.ncclguard.track.NativeAccess;
import dev.ncclguard.track.Tracker;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The native-method bridges: JNA direct mapping, JavaCPP, hand-written JNI named as the C
 * functions, and methods a bindings file maps. Their wrappers (see {@link NativeWrapper}) call in
 * here with a site number; this tells the tracker, labelled with the site's bridge.
 */
public final class NativeBridge implements NativeSink {
    public static final String JNA_DIRECT = "jna-direct";
    public static final String JAVACPP = "javacpp";
    public static final String JNI = "jni";

    private final CallProtocol calls;
    private final String prefix;
    private volatile NativeMethodTransformer transformer;
    /** What this bridge reaches, in one line for the attach command. */
    private volatile String coverage = "JNA direct mapping, JNI and JavaCPP native methods: wrapped as their classes load";
    /** Sites by id; copied on write (sites are added when classes load, read on every call). */
    private volatile NativeSite[] sites = new NativeSite[0];
    /** Calls of the install-time self-check's site, which is no NCCL or CUDA function. */
    private final AtomicLong probeCalls = new AtomicLong();
    private volatile int probeSite = -1;

    /** @param prefix the native method prefix the renamed natives carry */
    public NativeBridge(Tracker tracker, String prefix) {
        this.calls = new CallProtocol(tracker, "native", false);
        this.prefix = prefix;
    }

    public String prefix() {
        return prefix;
    }

    /** The transformer that wraps native methods as their classes load. */
    public NativeMethodTransformer transformer() {
        return transformer;
    }

    void transformer(NativeMethodTransformer wrapping) {
        this.transformer = wrapping;
    }

    /** What this bridge reaches, in one line (the attach command prints it). */
    public String coverage() {
        return coverage;
    }

    public void coverage(String line) {
        coverage = line;
    }

    /** Adds a site and returns its id. */
    synchronized int add(SiteFactory factory) {
        NativeSite[] known = sites;
        NativeSite site = factory.make(known.length);
        NativeSite[] grown = Arrays.copyOf(known, known.length + 1);
        grown[known.length] = site;
        sites = grown;
        return site.id;
    }

    /**
     * Adds the site of a static JNI method named as catalog function {@code symbol}, as the
     * transformer does when its class loads, and returns its id; for benchmarks of the bridge alone.
     */
    public int addStaticSite(String owner, String symbol, String descriptor) {
        NativeFunction fn = Catalog.lookup(symbol);
        if (fn == null) {
            throw new IllegalArgumentException(symbol + " is not in the catalog");
        }
        int params = net.bytebuddy.jar.asm.Type.getArgumentTypes(descriptor).length;
        char returnKind = descriptor.endsWith(")I") ? 'I' : descriptor.endsWith(")J") ? 'J' : 'V';
        return add(id -> new NativeSite(id, fn, JNI, owner, null, symbol, descriptor, true, params, returnKind,
                NativeSite.identity(params)));
    }

    /** Reserves the self-check's site: its calls are counted, not tracked. */
    synchronized int addProbe() {
        NativeSite[] grown = Arrays.copyOf(sites, sites.length + 1);
        probeSite = sites.length;
        sites = grown;
        return probeSite;
    }

    long probeCalls() {
        return probeCalls.get();
    }

    /** Builds a site once its id is known. */
    @FunctionalInterface
    interface SiteFactory {
        NativeSite make(int id);
    }

    public NativeSite site(int id) {
        NativeSite[] known = sites;
        return id >= 0 && id < known.length ? known[id] : null;
    }

    /** The sites of classes defined by {@code loader}, for exit-time calls. */
    List<NativeSite> sitesOf(ClassLoader loader) {
        List<NativeSite> found = new ArrayList<>();
        for (NativeSite s : sites) {
            if (s != null && s.definedBy(loader)) {
                found.add(s);
            }
        }
        return found;
    }

    @Override
    public long enter(int id, long w0, Object r0, long w1, Object r1, long w2, Object r2, long w3, Object r3,
            long w4, Object r4) {
        NativeSite site = site(id);
        if (site == null) {
            if (id == probeSite) {
                probeCalls.incrementAndGet();
            }
            return 0L;
        }
        NativeArgs a = NativeArgs.of(site, w0, r0, w1, r1, w2, r2, w3, r3, w4, r4, 0L);
        try {
            return calls.enter(site.fn, a);
        } finally {
            a.clear();
        }
    }

    @Override
    public void exit(int id, long w0, Object r0, long w1, Object r1, long w2, Object r2, long w3, Object r3,
            long w4, Object r4, long result, Object receiver, long token) {
        NativeSite site = site(id);
        if (site == null) {
            return;
        }
        if (receiver != null && site.receiver == null) {
            site.receiver = receiver;
        }
        NativeArgs a = NativeArgs.of(site, w0, r0, w1, r1, w2, r2, w3, r3, w4, r4, result);
        try {
            calls.exit(site.fn, a, site.status(result), token, site.bridge, access(site));
        } finally {
            a.clear();
        }
    }

    /*
     * The carried-record path of the hot calls (CallProtocol.onHandles): the record is found once,
     * before the call, and the wrapper carries it and the token to the exit in its locals, as the
     * JNA bridge's woven code does; no per-thread arguments. The agent's own exit-time calls go to
     * the renamed natives, past the wrappers, so none arrives here.
     */

    @Override
    public Object find(int id, long handle, Object handleRef, long stream, Object streamRef) {
        NativeSite site = site(id);
        if (site == null) {
            return null;
        }
        NativeFunction f = site.fn;
        return CallProtocol.findsByStream(f) ? calls.find(f, 0L, site.handleIn(site.slots.stream(), stream, streamRef))
                : calls.find(f, site.handleIn(site.slots.handle(), handle, handleRef), 0L);
    }

    @Override
    public long token(int id, Object found) {
        NativeSite site = site(id);
        return site == null ? 0L : calls.token(site.fn, found);
    }

    @Override
    public void exit(int id, Object found, long handle, Object handleRef, long stream, Object streamRef, long result,
            Object receiver, long token) {
        NativeSite site = site(id);
        if (site == null) {
            return;
        }
        if (receiver != null && site.receiver == null) {
            site.receiver = receiver;
        }
        NativeFunction f = site.fn;
        if (CallProtocol.exitReadsHandles(f, found)) {
            calls.exit(f, found, site.handleIn(site.slots.handle(), handle, handleRef),
                    site.handleIn(site.slots.stream(), stream, streamRef), site.status(result), token, site.bridge,
                    access(site));
        } else {
            calls.exit(f, found, CallProtocol.NOT_READ, CallProtocol.NOT_READ, site.status(result), token,
                    site.bridge, null);
        }
    }

    /** A live instance of the site's class that the application called a wrapped method on, or null. */
    Object receiverOf(NativeSite site) {
        for (NativeSite s : sitesOf(site.loader())) {
            Object receiver = s.owner.equals(site.owner) ? s.receiver : null;
            if (receiver != null) {
                return receiver;
            }
        }
        return null;
    }

    private NativeAccess access(NativeSite site) {
        NativeAccess access = site.access;
        if (access == null) {
            access = new NativeMethodAccess(this, site);
            site.access = access;
        }
        return access;
    }
}
