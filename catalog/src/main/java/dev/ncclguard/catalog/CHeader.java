package dev.ncclguard.catalog;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * Writes the catalog as a C header for the agent's native library (native-shim/src/main/c): per
 * function its id, effect, C parameter list and the slot each argument goes to, as X-macros the
 * generic wrappers expand. A build-time tool ({@code main(outputFile)}, run by native-shim's
 * build before make); the agent itself never runs it.
 */
public final class CHeader {
    /** Handle types passed by value: their slot holds the pointer. */
    private static final Set<String> HANDLES = Set.of("ncclComm_t", "cudaStream_t", "cudaEvent_t", "ncclWindow_t",
            "CUstream", "CUevent");
    private static final Set<String> SIGNED = Set.of("int", "ncclDataType_t", "ncclRedOp_t");
    private static final Set<String> UNSIGNED = Set.of("size_t", "unsigned int");
    /** Structs passed by value: the slot holds their address (valid during the call). */
    private static final Set<String> BY_VALUE = Set.of("ncclUniqueId");
    /** The most arguments the library's JNI call() passes on (as integers) to a real function. */
    static final int CALLABLE_ARGS = 4;

    private CHeader() {
    }

    public static void main(String[] args) throws IOException {
        if (args.length != 1) {
            System.err.println("usage: CHeader <output header>");
            System.exit(2);
        }
        Path out = Path.of(args[0]);
        byte[] text = generate().getBytes(StandardCharsets.UTF_8);
        // unchanged content keeps its timestamp, so make does not rebuild the library for nothing
        if (Files.exists(out) && java.util.Arrays.equals(Files.readAllBytes(out), text)) {
            return;
        }
        if (out.getParent() != null) {
            Files.createDirectories(out.getParent());
        }
        Path tmp = out.resolveSibling(out.getFileName() + ".tmp");
        Files.write(tmp, text);
        Files.move(tmp, out, java.nio.file.StandardCopyOption.REPLACE_EXISTING,
                java.nio.file.StandardCopyOption.ATOMIC_MOVE);
    }

    /** One C parameter: its type, its name, and how its slot holds it. */
    record Param(String type, String name, String kind) {
    }

    /** The header's text; the same catalog always gives the same bytes. */
    public static String generate() {
        StringBuilder b = new StringBuilder(16 * 1024);
        b.append("/* Generated from dev.ncclguard.catalog.Catalog by dev.ncclguard.catalog.CHeader: do not edit. */\n");
        b.append("#ifndef NG_CATALOG_H\n#define NG_CATALOG_H\n\n");
        b.append("#define NG_FN_COUNT ").append(Catalog.size()).append("\n");
        int maxArgs = 0;
        for (NativeFunction fn : Catalog.all()) {
            maxArgs = Math.max(maxArgs, parse(fn).size());
        }
        b.append("/* the most parameters of any function: the length of a call's slots */\n");
        b.append("#define NG_MAX_ARGS ").append(maxArgs).append("\n\n");
        b.append("/* dev.ncclguard.catalog.Effect, by ordinal */\n");
        for (Effect e : Effect.values()) {
            b.append("#define NG_EFFECT_").append(e.name()).append(' ').append(e.ordinal()).append('\n');
        }
        b.append("#define NG_EFFECT_COUNT ").append(Effect.values().length).append("\n\n");
        b.append("/* NG_CATALOG(X): one X per function, in id order (= NativeFunction.id):\n");
        b.append(" *   X(id, name, LIB, EFFECT, params, args, nargs, slots, callable)\n");
        b.append(" * LIB: NCCL, CUDART or CUDA (the driver, libcuda.so.1); params: the C parameter list; args: the names, to forward the call;\n");
        b.append(" * slots: NG_SLOT_<kind>(i, name) per parameter (PTR: pointer or handle, INT: signed integer\n");
        b.append(" * or enum, UINT: unsigned integer, ADDR: struct by value, whose address the slot holds);\n");
        b.append(" * callable: 1 when the parameters are at most " + CALLABLE_ARGS
                + " integers or pointers (the JNI call() may make it). */\n");
        b.append("#define NG_CATALOG(X) \\\n");
        for (NativeFunction fn : Catalog.all()) {
            List<Param> params = parse(fn);
            check(fn, params);
            boolean callable = params.size() <= CALLABLE_ARGS;
            StringBuilder names = new StringBuilder();
            StringBuilder slots = new StringBuilder();
            for (int i = 0; i < params.size(); i++) {
                Param p = params.get(i);
                if (i > 0) {
                    names.append(", ");
                    slots.append(' ');
                }
                names.append(p.name());
                slots.append("NG_SLOT_").append(p.kind()).append('(').append(i).append(", ").append(p.name()).append(')');
                callable &= !p.kind().equals("ADDR");
            }
            String params0 = Catalog.cParameters(fn);
            b.append("  X(").append(fn.id()).append(", ").append(fn.symbol()).append(", ")
                    .append(library(fn)).append(", NG_EFFECT_")
                    .append(fn.effect().name()).append(", (").append(params0).append("), (").append(names)
                    .append("), ").append(params.size()).append(", ").append(slots).append(", ")
                    .append(callable ? 1 : 0).append(") \\\n");
        }
        b.append("\n");
        b.append("/* NG_POSITIONS(P): the argument positions of each function, -1 for none:\n");
        b.append(" *   P(id, ").append(String.join(", ", NativeFunction.ROLES)).append(") */\n");
        b.append("#define NG_POSITIONS(P) \\\n");
        for (NativeFunction fn : Catalog.all()) {
            b.append("  P(").append(fn.id());
            for (int pos : fn.positions()) {
                b.append(", ").append(pos);
            }
            b.append(") \\\n");
        }
        b.append("\n#endif\n");
        return b.toString();
    }

    /** The library that defines the function: NCCL, CUDART (the runtime) or CUDA (the driver). */
    static String library(NativeFunction fn) {
        String s = fn.symbol();
        return s.startsWith("nccl") ? "NCCL" : s.startsWith("cuda") ? "CUDART" : "CUDA";
    }

    static List<Param> parse(NativeFunction fn) {
        String list = Catalog.cParameters(fn);
        if (list == null || list.isBlank()) {
            throw new IllegalStateException(fn.symbol() + ": no C parameter list");
        }
        List<Param> params = new ArrayList<>();
        if (list.trim().equals("void")) {
            return params;
        }
        for (String part : list.split(",")) {
            String p = part.trim();
            int i = p.length();
            while (i > 0 && (Character.isLetterOrDigit(p.charAt(i - 1)) || p.charAt(i - 1) == '_')) {
                i--;
            }
            String name = p.substring(i);
            // a const handle (ncclCommRegister's "const ncclComm_t comm") is passed as the handle is
            String type = p.substring(0, i).trim().replaceAll("\\s+", " ").replace(" *", "*");
            if (type.startsWith("const ") && HANDLES.contains(type.substring(6))) {
                type = type.substring(6);
            }
            if (name.isEmpty() || type.isEmpty()) {
                throw new IllegalStateException(fn.symbol() + ": cannot read parameter '" + p + "'");
            }
            params.add(new Param(type, name, kind(fn, type)));
        }
        return params;
    }

    private static String kind(NativeFunction fn, String type) {
        if (type.endsWith("*") || HANDLES.contains(type)) {
            return "PTR";
        }
        if (SIGNED.contains(type)) {
            return "INT";
        }
        if (UNSIGNED.contains(type)) {
            return "UINT";
        }
        if (BY_VALUE.contains(type)) {
            return "ADDR";
        }
        throw new IllegalStateException(fn.symbol() + ": parameter type '" + type
                + "' is unknown to CHeader: say how its slot holds it");
    }

    /** The catalog's positions must name parameters of the right type. */
    private static void check(NativeFunction fn, List<Param> params) {
        for (int pos : fn.positions()) {
            if (pos >= params.size()) {
                throw new IllegalStateException(fn.symbol() + ": position " + pos + " beyond its "
                        + params.size() + " parameters");
            }
        }
        if (fn.stream() >= 0 && !Set.of("cudaStream_t", "CUstream").contains(params.get(fn.stream()).type())) {
            throw new IllegalStateException(fn.symbol() + ": the stream position is no cudaStream_t");
        }
        if (fn.event() >= 0 && !Set.of("cudaEvent_t", "CUevent").contains(params.get(fn.event()).type())) {
            throw new IllegalStateException(fn.symbol() + ": the event position is no cudaEvent_t");
        }
        if (fn.parentComm() >= 0 && !params.get(fn.parentComm()).type().equals("ncclComm_t")) {
            throw new IllegalStateException(fn.symbol() + ": the parent position is no ncclComm_t");
        }
        if (fn.comm() >= 0 && !params.get(fn.comm()).type().equals("ncclComm_t")) {
            throw new IllegalStateException(fn.symbol() + ": the comm position is no ncclComm_t");
        }
        if (fn.bytes() >= 0 && !params.get(fn.bytes()).type().equals("size_t")) {
            throw new IllegalStateException(fn.symbol() + ": the bytes position is no size_t");
        }
        if (fn.handle() >= 0) {
            String type = params.get(fn.handle()).type();
            boolean ok;
            switch (fn.effect()) {
                // a device communicator is a struct the call fills in, and one it reads back
                case DEVCOMM_CREATE -> ok = type.equals("ncclDevComm_t*");
                case DEVCOMM_DESTROY -> ok = type.equals("ncclDevComm_t const*");
                // memory and registrations are void* handles
                case MEM_ALLOC, COMM_REGISTER -> ok = type.equals("void**");
                case MEM_FREE, COMM_DEREGISTER -> ok = type.equals("void*");
                default -> ok = fn.change().creates()
                        ? type.endsWith("_t*") || type.equals("CUevent*") || type.equals("CUstream*")
                        : HANDLES.contains(type);
            }
            if (!ok) {
                throw new IllegalStateException(fn.symbol() + ": the handle position is a " + type);
            }
        }
    }
}
