package dev.ncclguard.config;

import dev.ncclguard.catalog.Catalog;
import dev.ncclguard.catalog.NativeFunction;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import net.bytebuddy.jar.asm.Type;

/**
 * The bindings file (option {@code bindings}): maps an application's own native methods, named
 * as it likes, to catalog functions. One line per method:
 * <pre>
 * # comment
 * com.acme.Gpu#createComm(I[BI)J = ncclCommInitRank handle=return nranks=0 uniqueId=1 rank=2
 * com.acme.Gpu#destroyComm = ncclCommDestroy handle=0
 * </pre>
 * Left of {@code =}: the class's binary name, {@code #}, the method name, and optionally its JVM
 * descriptor (without it, every native method of that name in the class). Right: the catalog
 * function, then where each of its arguments is: a role of the function (handle, rank, nranks,
 * uniqueId, stream, event, device, parentComm, color, key, count, rankList, comm, bytes) = the 0-based Java
 * argument index, or {@code handle=return} when the method returns the handle as a long.
 */
public final class Bindings {
    /** The position of a role that is the method's return value ({@code handle=return}). */
    public static final int RESULT = 1 << 16;

    /** One line of the file: the method and its function, positions in Java argument indexes. */
    public record Entry(String internalClass, String method, String descriptor, NativeFunction fn, int line) {
        public boolean matches(String desc) {
            return descriptor == null || descriptor.equals(desc);
        }
    }

    private static final List<String> ROLES = NativeFunction.ROLES;

    private final Map<String, List<Entry>> byClass;

    private Bindings(Map<String, List<Entry>> byClass) {
        this.byClass = byClass;
    }

    public static Bindings none() {
        return new Bindings(Map.of());
    }

    /** Reads and checks the file; throws {@link BindingsException} naming the first bad line. */
    public static Bindings load(Path file) {
        return Parse.file(file);
    }

    public static Bindings parse(String name, List<String> lines) {
        return Parse.lines(name, lines);
    }

    /**
     * The reading of a file, in a class of its own: premain, which reads none without the option,
     * loads neither it nor {@link BindingsException}.
     */
    private static final class Parse {
        private Parse() {
        }

        static Bindings file(Path file) {
            List<String> lines;
            try {
                lines = TextFile.lines(file);
            } catch (TextFile.Unusable e) {
                throw new BindingsException("ncclguard: bindings file " + file + " " + e.getMessage()
                        + "; set bindings= to a bindings file, or none");
            }
            return lines(file.toString(), lines);
        }

        static Bindings lines(String name, List<String> lines) {
            Map<String, List<Entry>> byClass = new LinkedHashMap<>();
            Set<String> seen = new HashSet<>();
            for (int i = 0; i < lines.size(); i++) {
                String text = lines.get(i).strip();
                if (text.isEmpty() || text.startsWith("#")) {
                    continue;
                }
                Entry e;
                try {
                    e = parseLine(text, i + 1);
                } catch (IllegalArgumentException ex) {
                    throw new BindingsException("ncclguard: bindings file " + name + " line " + (i + 1) + ": "
                            + ex.getMessage());
                }
                String key = e.internalClass + "#" + e.method + (e.descriptor == null ? "" : e.descriptor);
                if (!seen.add(key)) {
                    throw new BindingsException("ncclguard: bindings file " + name + " line " + (i + 1)
                            + ": " + e.internalClass.replace('/', '.') + "#" + e.method + " is mapped twice");
                }
                byClass.computeIfAbsent(e.internalClass, k -> new ArrayList<>()).add(e);
            }
            Map<String, List<Entry>> frozen = new HashMap<>();
            byClass.forEach((k, v) -> frozen.put(k, List.copyOf(v)));
            return new Bindings(Collections.unmodifiableMap(frozen));
        }
    }

    public boolean isEmpty() {
        return byClass.isEmpty();
    }

    public boolean hasClass(String internalName) {
        return byClass.containsKey(internalName);
    }

    /** The entry for a native method of a class, or null. */
    public Entry find(String internalName, String method, String descriptor) {
        List<Entry> entries = byClass.get(internalName);
        if (entries == null) {
            return null;
        }
        Entry any = null;
        for (Entry e : entries) {
            if (e.method.equals(method) && e.matches(descriptor)) {
                if (e.descriptor != null) {
                    return e;
                }
                any = e;
            }
        }
        return any;
    }

    /** Every entry, for the warning about methods that never showed up. */
    public List<Entry> entries() {
        List<Entry> all = new ArrayList<>();
        byClass.values().forEach(all::addAll);
        return all;
    }

    private static Entry parseLine(String text, int line) {
        int eq = text.indexOf('=');
        if (eq < 0) {
            throw new IllegalArgumentException("expected 'class#method[(descriptor)] = function role=index ...', got '"
                    + text + "'");
        }
        String left = text.substring(0, eq).strip();
        String[] right = text.substring(eq + 1).strip().split("\\s+");
        int hash = left.indexOf('#');
        if (hash <= 0 || hash == left.length() - 1) {
            throw new IllegalArgumentException("'" + left + "' is not class#method");
        }
        String className = left.substring(0, hash);
        String method = left.substring(hash + 1);
        String descriptor = null;
        int paren = method.indexOf('(');
        if (paren >= 0) {
            descriptor = method.substring(paren).strip();
            method = method.substring(0, paren).strip();
        }
        if (!isJavaName(className.replace('.', 'x').replace('$', 'x'))) {
            throw new IllegalArgumentException("'" + className + "' is not a class name");
        }
        if (!isJavaName(method)) {
            throw new IllegalArgumentException("'" + method + "' is not a method name");
        }
        Type[] params = null;
        Type returnType = null;
        if (descriptor != null) {
            try {
                params = Type.getArgumentTypes(descriptor);
                returnType = Type.getReturnType(descriptor);
                if (!Type.getMethodDescriptor(returnType, params).equals(descriptor)) {
                    throw new IllegalArgumentException();
                }
            } catch (RuntimeException e) {
                throw new IllegalArgumentException("'" + descriptor + "' is not a JVM method descriptor such as (I[BI)J");
            }
        }
        if (right.length == 0 || right[0].isEmpty()) {
            throw new IllegalArgumentException("no function after '='");
        }
        NativeFunction fn = Catalog.lookup(right[0]);
        if (fn == null) {
            throw new IllegalArgumentException("unknown function '" + right[0] + "': not one that ncclguard follows");
        }
        Map<String, Integer> at = new HashMap<>();
        for (int i = 1; i < right.length; i++) {
            String[] kv = right[i].split("=", 2);
            if (kv.length != 2 || !ROLES.contains(kv[0])) {
                throw new IllegalArgumentException("'" + right[i] + "': expected role=index with a role of "
                        + String.join(", ", ROLES));
            }
            String role = kv[0];
            if (catalogPosition(fn, role) == NativeFunction.NONE) {
                throw new IllegalArgumentException(fn.symbol() + " has no " + role);
            }
            if (at.containsKey(role)) {
                throw new IllegalArgumentException(role + " is given twice");
            }
            int index;
            if (kv[1].equals("return")) {
                if (!role.equals("handle")) {
                    throw new IllegalArgumentException("only the handle can be the return value");
                }
                if (returnType != null && returnType.getSort() != Type.LONG) {
                    throw new IllegalArgumentException("handle=return needs a method that returns long (J), not "
                            + returnType.getDescriptor());
                }
                index = RESULT;
            } else {
                try {
                    index = Integer.parseInt(kv[1]);
                } catch (NumberFormatException e) {
                    index = -1;
                }
                if (index < 0) {
                    throw new IllegalArgumentException("'" + right[i] + "': the index must be a Java argument index"
                            + " from 0, or 'return'");
                }
                if (params != null && index >= params.length) {
                    throw new IllegalArgumentException("'" + right[i] + "': the method has " + params.length
                            + " argument(s)");
                }
            }
            at.put(role, index);
        }
        // roles that share one C argument in the catalog (a stream call's handle is its stream)
        for (String role : ROLES) {
            int c = catalogPosition(fn, role);
            if (c != NativeFunction.NONE && !at.containsKey(role)) {
                for (String given : List.copyOf(at.keySet())) {
                    if (catalogPosition(fn, given) == c) {
                        at.put(role, at.get(given));
                        break;
                    }
                }
            }
        }
        if (fn.handle() != NativeFunction.NONE && !at.containsKey("handle")) {
            throw new IllegalArgumentException(fn.symbol() + " needs handle=<index> or handle=return");
        }
        NativeFunction mapped = new NativeFunction(fn.symbol(), fn.effect(), pos(at, "handle"),
                pos(at, "parentComm"), pos(at, "stream"), pos(at, "event"), pos(at, "rank"), pos(at, "nranks"),
                pos(at, "uniqueId"), pos(at, "device"), pos(at, "color"), pos(at, "key"), pos(at, "count"),
                pos(at, "rankList"), pos(at, "comm"), pos(at, "bytes"), fn.id());
        return new Entry(className.replace('.', '/'), method, descriptor, mapped, line);
    }

    /** C position to Java argument index for the exit-time calls of a mapped method. */
    public static int[] cToJava(NativeFunction catalog, NativeFunction mapped) {
        int size = 0;
        for (String role : ROLES) {
            size = Math.max(size, catalogPosition(catalog, role) + 1);
        }
        int[] map = new int[size];
        java.util.Arrays.fill(map, -1);
        for (String role : ROLES) {
            int c = catalogPosition(catalog, role);
            int j = catalogPosition(mapped, role);
            if (c >= 0 && j >= 0 && j != RESULT) {
                map[c] = j;
            }
        }
        return map;
    }

    private static int pos(Map<String, Integer> at, String role) {
        return at.getOrDefault(role, NativeFunction.NONE);
    }

    private static int catalogPosition(NativeFunction fn, String role) {
        switch (role) {
            case "handle": return fn.handle();
            case "parentComm": return fn.parentComm();
            case "stream": return fn.stream();
            case "event": return fn.event();
            case "rank": return fn.rank();
            case "nranks": return fn.nranks();
            case "uniqueId": return fn.uniqueId();
            case "device": return fn.device();
            case "color": return fn.color();
            case "key": return fn.key();
            case "count": return fn.count();
            case "rankList": return fn.rankList();
            case "comm": return fn.comm();
            case "bytes": return fn.bytes();
            default: return NativeFunction.NONE;
        }
    }

    private static boolean isJavaName(String s) {
        if (s.isEmpty() || !Character.isJavaIdentifierStart(s.charAt(0))) {
            return false;
        }
        for (int i = 1; i < s.length(); i++) {
            if (!Character.isJavaIdentifierPart(s.charAt(i))) {
                return false;
            }
        }
        return true;
    }

    /** A bad bindings file: the message is the one line to show. */
    public static final class BindingsException extends IllegalArgumentException {
        private static final long serialVersionUID = 1L;

        BindingsException(String message) {
            super(message);
        }
    }
}
