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

    record Rule(Category category, Pattern pattern) {
    }

    /** The category of a line and the rank it blames (null when it names none). */
    record Verdict(Category category, Integer peer) {
    }

    private static Rule rule(Category category, String regex) {
        return new Rule(category, Pattern.compile(regex));
    }

    static final List<Rule> RULES = List.of(
            // a peer's connection to this rank's proxy service went away: it exited with its comm alive
            rule(Category.EXIT, "\\[Service thread\\] Connection closed by localRank (?<peer>-?\\d+)"),
            rule(Category.EXIT, "\\[Service thread\\] Could not receive type from localRank (?<peer>-?\\d+)"),
            rule(Category.EXIT, "\\[Service thread\\] Accept failed"),
            rule(Category.EXIT, "\\[Proxy Service \\d+\\] Failed to execute operation Close from rank (?<peer>\\d+)"),
            rule(Category.EXIT, "(?i)Cuda failure '?(driver shutting down|cudart unloading)"),
            rule(Category.EXIT, "cudaErrorCudartUnloading|CUDA_ERROR_DEINITIALIZED"),
            // version: before the generic CUDA failures below
            rule(Category.VERSION, "undefined symbol|Error looking up function|symbol lookup error"
                    + "|named symbol not found|Failed to find \\w+ symbol"),
            rule(Category.VERSION, "(?i)driver version is insufficient|cudaErrorInsufficientDriver"
                    + "|version mismatch|mismatched (nccl )?version|incompatible (nccl |plugin )?version"),
            rule(Category.INIT, "Duplicate GPU detected"),
            rule(Category.INIT, "(?i)Cuda failure '?(initialization error|invalid device ordinal|out of memory"
                    + "|no CUDA-capable device|all CUDA-capable devices are busy|CUDA-capable device\\(s\\) is/are busy"
                    + "|invalid device context|context is destroyed)"),
            rule(Category.INIT, "(?i)invalid rank|nranks|unique ?id|invalid config|NCCL_CONFIG_INITIALIZER"
                    + "|invalid usage|invalid argument|not initialized|already (initialized|loaded)"),
            rule(Category.INIT, "(?i)NET/Plugin|Failed to (load|open) .*plugin|dlopen|dlerror|libnccl-net"),
            rule(Category.NETWORK, "\\[Proxy Service \\d+\\] Failed to execute operation \\w+ from rank (?<peer>\\d+)"),
            rule(Category.NETWORK, "NET/IB|ibv_\\w+|\\bIB\\b|RoCE|GID|mlx5"),
            rule(Category.NETWORK, "(?i)timeout|timed out"),
            rule(Category.NETWORK, "(?i)NET/Socket|socket|Bootstrap|NCCL_SOCKET_IFNAME|Connect(ion)? to .* failed"
                    + "|Connection (refused|reset|closed by remote peer)|remote peer|Net :|unreachable"),
            rule(Category.INIT, "(?i)Cuda failure|unhandled cuda error"));

    private WarningRules() {
    }

    static Verdict classify(String message) {
        for (Rule rule : RULES) {
            Matcher m = rule.pattern().matcher(message);
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

    /** The message with its numbers and addresses blanked, so repeats of one warning group together. */
    static String shape(String message) {
        return message.replaceAll("0x[0-9a-fA-F]+", "0x…").replaceAll("\\d+", "N");
    }
}
