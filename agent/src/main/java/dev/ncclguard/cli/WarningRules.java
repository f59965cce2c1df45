package dev.ncclguard.cli;

import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What NCCL's warnings mean, as data: a category (with its likely cause and fix) and the message
 * patterns that belong to it, most specific first. A named group {@code peer} in a pattern is the
 * rank the line blames (its {@code localRank N} or {@code from rank N}).
 */
final class WarningRules {
    enum Category {
        EXIT("resource not released at exit",
                "a process of the job exited (or tore down its CUDA context) while a communicator or its work was"
                        + " still alive; the peers' proxy service threads saw its connections drop instead of an"
                        + " orderly close. The rank a line names (localRank N, from rank N) is usually the one that"
                        + " never called ncclCommDestroy; 'driver shutting down' is NCCL's own threads calling CUDA"
                        + " after the process began to unload it.",
                "destroy every communicator on every rank before exit (ncclCommDestroy after the last collective"
                        + " completed, ncclCommAbort on error paths) and synchronize streams and events first; run"
                        + " each JVM with -javaagent:ncclguard-agent.jar=report=leaks-%p.json to name the handles"
                        + " and their creating stacks (merge the reports to see which rank), or action=cleanup to"
                        + " have the agent release them at exit."),
        INIT("dependency or initialization conflict",
                "NCCL could not set up a communicator in this process: two ranks on one GPU, a device that is"
                        + " busy, absent or out of memory, arguments that do not agree between ranks, or a second"
                        + " NCCL, network plugin or CUDA runtime loaded alongside the one the application meant.",
                "give each rank its own device (cudaSetDevice before ncclCommInitRank; check CUDA_VISIBLE_DEVICES"
                        + " per process), make every rank pass the same nranks and unique id, and load exactly one"
                        + " libnccl.so.2 and one libcudart per process (jna.library.path, LD_LIBRARY_PATH,"
                        + " NCCL_NET_PLUGIN); NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT shows what NCCL found."),
        NETWORK("network configuration",
                "ranks could not reach each other over the transport NCCL chose (sockets or InfiniBand/RoCE):"
                        + " the wrong or an unreachable interface, a firewall on the bootstrap ports, an IB link or"
                        + " GID problem, or a peer that went away mid-operation (timeouts).",
                "set NCCL_SOCKET_IFNAME (and NCCL_IB_HCA) to the interfaces the hosts share, open the ports"
                        + " between them, check the IB links (ibstat) and NCCL_IB_GID_INDEX for RoCE;"
                        + " NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET shows what NCCL picked. If a peer died,"
                        + " its own log has the first error."),
        VERSION("version mismatch",
                "the process runs a library older (or newer) than the code that calls it: a binding calls a"
                        + " function this libnccl or libcudart does not export (a newer API such as ncclCommShrink"
                        + " on an older NCCL), the CUDA runtime needs a newer driver, a network plugin speaks another"
                        + " plugin API, or ranks run different NCCL versions.",
                "check which libnccl.so.2 each process loads (the log's 'NCCL version' line, LD_DEBUG=libs,"
                        + " /proc/PID/maps), run one NCCL version on every rank, and upgrade the library, plugin or"
                        + " driver to what the binding was written for."),
        OTHER("other NCCL warnings",
                "not one of the cases ncclguard knows.",
                "see the NCCL troubleshooting guide; NCCL_DEBUG=INFO shows the steps before the warning.");

        final String title;
        final String cause;
        final String fix;

        Category(String title, String cause, String fix) {
            this.title = title;
            this.cause = cause;
            this.fix = fix;
        }
    }

    /**
     * A pattern and the substrings (lower case) of which a message must hold one before the pattern
     * is tried: most messages are turned down by a few substring searches, and no pattern runs on
     * a message that cannot match it.
     */
    record Rule(Category category, Pattern pattern, List<String> needles) {
    }

    /** The category of a line and the rank it blames (null when it names none). */
    record Verdict(Category category, Integer peer) {
    }

    private static Rule rule(Category category, String regex, String... needles) {
        return new Rule(category, Pattern.compile(regex), List.of(needles));
    }

    // No pattern has a quantifier over an unbounded run followed by more pattern ('.*x'): matching
    // stays linear in the message, which is at most NcclLog.MAX_MESSAGE characters.
    static final List<Rule> RULES = List.of(
            // a peer's connection to this rank's proxy service went away: it exited with its comm alive
            rule(Category.EXIT, "\\[Service thread\\] Connection closed by localRank (?<peer>-?\\d{1,9})",
                    "connection closed by localrank"),
            rule(Category.EXIT, "\\[Service thread\\] Could not receive type from localRank (?<peer>-?\\d{1,9})",
                    "could not receive type from localrank"),
            rule(Category.EXIT, "\\[Service thread\\] Accept failed", "accept failed"),
            rule(Category.EXIT, "\\[Proxy Service \\d{1,9}\\] Failed to execute operation Close from rank (?<peer>\\d{1,9})",
                    "operation close from rank"),
            rule(Category.EXIT, "(?i)Cuda failure '?(driver shutting down|cudart unloading)",
                    "driver shutting down", "cudart unloading"),
            rule(Category.EXIT, "cudaErrorCudartUnloading|CUDA_ERROR_DEINITIALIZED",
                    "cudaerrorcudartunloading", "cuda_error_deinitialized"),
            // version: before the generic CUDA failures below
            rule(Category.VERSION, "undefined symbol|Error looking up function|symbol lookup error"
                    + "|named symbol not found|Failed to find \\w{1,128} symbol",
                    "undefined symbol", "error looking up function", "symbol lookup error", "named symbol not found",
                    "failed to find"),
            rule(Category.VERSION, "(?i)driver version is insufficient|cudaErrorInsufficientDriver"
                    + "|version mismatch|mismatched (nccl )?version|incompatible (nccl |plugin )?version",
                    "driver version is insufficient", "cudaerrorinsufficientdriver", "version mismatch", "mismatched",
                    "incompatible"),
            rule(Category.INIT, "Duplicate GPU detected", "duplicate gpu detected"),
            rule(Category.INIT, "(?i)Cuda failure '?(initialization error|invalid device ordinal|out of memory"
                    + "|no CUDA-capable device|all CUDA-capable devices are busy|CUDA-capable device\\(s\\) is/are busy"
                    + "|invalid device context|context is destroyed)", "cuda failure"),
            rule(Category.INIT, "(?i)invalid rank|nranks|unique ?id|invalid config|NCCL_CONFIG_INITIALIZER"
                    + "|invalid usage|invalid argument|not initialized|already (initialized|loaded)",
                    "invalid", "nranks", "unique", "nccl_config_initializer", "not initialized", "already "),
            rule(Category.INIT, "(?i)NET/Plugin|Failed to (load|open) .{0,256}?plugin|dlopen|dlerror|libnccl-net",
                    "net/plugin", "failed to load", "failed to open", "dlopen", "dlerror", "libnccl-net"),
            rule(Category.NETWORK, "\\[Proxy Service \\d{1,9}\\] Failed to execute operation \\w{1,64} from rank (?<peer>\\d{1,9})",
                    "failed to execute operation"),
            rule(Category.NETWORK, "NET/IB|ibv_\\w|\\bIB\\b|RoCE|GID|mlx5", "net/ib", "ibv_", "ib", "roce", "gid", "mlx5"),
            rule(Category.NETWORK, "(?i)timeout|timed out", "timeout", "timed out"),
            rule(Category.NETWORK, "(?i)NET/Socket|socket|Bootstrap|NCCL_SOCKET_IFNAME|Connect(ion)? to .{0,256}? failed"
                    + "|Connection (refused|reset|closed by remote peer)|remote peer|Net :|unreachable",
                    "socket", "bootstrap", "connect", "remote peer", "net :", "unreachable"),
            rule(Category.INIT, "(?i)Cuda failure|unhandled cuda error", "cuda failure", "unhandled cuda error"));

    private WarningRules() {
    }

    /**
     * Classifies the warnings of one log, remembering which rule took each shape of message: a
     * warning repeated with other numbers is classified by one pattern (the one that took its
     * shape, only when it names a rank), not by the search through every rule again.
     */
    static final class Classifier {
        private static final int MAX_SHAPES = 8192;
        private final java.util.Map<String, Integer> ruleOf = new java.util.HashMap<>();

        Verdict classify(String message, String shape) {
            Integer rule = ruleOf.get(shape);
            if (rule == null) {
                rule = ruleIndex(message);
                if (ruleOf.size() < MAX_SHAPES) {
                    ruleOf.put(shape, rule);
                }
            }
            if (rule < 0) {
                return new Verdict(Category.OTHER, null);
            }
            Rule r = RULES.get(rule);
            String after = PEER_AFTER[rule];
            if (after == null) {
                return new Verdict(r.category(), null);
            }
            // the rank follows a fixed phrase in every rule that names one: read it without the pattern
            int at = message.indexOf(after);
            Integer peer = at < 0 ? null : number(message, at + after.length());
            return peer != null ? new Verdict(r.category(), peer) : WarningRules.classify(message);
        }
    }

    /** For each rule, the phrase its named group {@code peer} follows; null for rules that name no rank. */
    private static final String[] PEER_AFTER = new String[RULES.size()];

    static {
        Pattern group = Pattern.compile("([A-Za-z ]+) \\(\\?<peer>");
        for (int i = 0; i < RULES.size(); i++) {
            Matcher m = group.matcher(RULES.get(i).pattern().pattern());
            PEER_AFTER[i] = m.find() ? m.group(1) + " " : null;
        }
    }

    /** An optional '-' and up to 9 digits at {@code at}, as the peer groups read them; null when none. */
    private static Integer number(String s, int at) {
        int i = at;
        boolean negative = i < s.length() && s.charAt(i) == '-';
        if (negative) {
            i++;
        }
        int start = i;
        int v = 0;
        while (i < s.length() && i - start < 9 && s.charAt(i) >= '0' && s.charAt(i) <= '9') {
            v = v * 10 + (s.charAt(i++) - '0');
        }
        return i == start ? null : negative ? -v : v;
    }

    private static String capped(String message) {
        return message.length() > NcclLog.MAX_MESSAGE ? message.substring(0, NcclLog.MAX_MESSAGE) : message;
    }

    /** The index in {@link #RULES} of the first rule that takes the message, or -1. */
    private static int ruleIndex(String message) {
        String text = capped(message);
        String lower = text.toLowerCase(java.util.Locale.ROOT);
        for (int i = 0; i < RULES.size(); i++) {
            Rule rule = RULES.get(i);
            if (holdsOne(lower, rule.needles()) && rule.pattern().matcher(text).find()) {
                return i;
            }
        }
        return -1;
    }

    static Verdict classify(String message) {
        String text = message.length() > NcclLog.MAX_MESSAGE ? message.substring(0, NcclLog.MAX_MESSAGE) : message;
        String lower = text.toLowerCase(java.util.Locale.ROOT);
        for (Rule rule : RULES) {
            if (!holdsOne(lower, rule.needles())) {
                continue;
            }
            Matcher m = rule.pattern().matcher(text);
            if (m.find()) {
                Integer peer = null;
                if (rule.pattern().pattern().contains("(?<peer>")) {
                    peer = Integer.valueOf(m.group("peer"));
                }
                return new Verdict(rule.category(), peer);
            }
        }
        return new Verdict(Category.OTHER, null);
    }

    private static boolean holdsOne(String text, List<String> needles) {
        for (String n : needles) {
            if (text.contains(n)) {
                return true;
            }
        }
        return false;
    }

    /** The message with its numbers and addresses blanked, so repeats of one warning group together. */
    static String shape(String message) {
        int n = Math.min(message.length(), NcclLog.MAX_MESSAGE);
        StringBuilder out = new StringBuilder(n);
        for (int i = 0; i < n; i++) {
            char c = message.charAt(i);
            if (c == '0' && i + 2 < n && message.charAt(i + 1) == 'x' && hex(message.charAt(i + 2))) {
                out.append("0x\u2026");
                i += 2;
                while (i + 1 < n && hex(message.charAt(i + 1))) {
                    i++;
                }
            } else if (c >= '0' && c <= '9') {
                out.append('N');
                while (i + 1 < n && message.charAt(i + 1) >= '0' && message.charAt(i + 1) <= '9') {
                    i++;
                }
            } else {
                out.append(c);
            }
        }
        return out.toString();
    }

    private static boolean hex(char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
    }
}
