package dev.ncclguard.cli;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * NCCL's lines picked out of a log that holds anything else too (the application's output, a
 * launcher's prefixes such as {@code [1,0]<stdout>:} or timestamps). NCCL prints
 * {@code host:pid:tid [device] [file.cc:line] NCCL WARN message} with NCCL_DEBUG=WARN or INFO,
 * and {@code NCCL version 2.28.3+cuda13.0} once per process.
 */
final class NcclLog {
    /** One NCCL line; host and pid are null when the line carries no prefix. */
    record Line(int number, String text, String host, Long pid, Integer device, String level, String message) {
        String process() {
            return pid == null ? "an unknown process" : "pid " + pid + (host != null ? " on " + host : "");
        }
    }

    private static final Pattern NCCL = Pattern.compile(
            "(?:(?<host>[^\\s:\\[\\]<>]+):(?<pid>\\d+):(?<tid>\\d+) \\[(?<dev>-?\\d+)\\] )?"
                    + "(?:(?<src>[\\w./-]+\\.(?:cc|c|cu|h|cpp):\\d+) )?NCCL (?<level>WARN|INFO|ABORT|TRACE)\\b ?(?<msg>.*)");
    private static final Pattern VERSION = Pattern.compile("^(?:.*\\s)?NCCL version (?<version>\\d+\\.\\d+\\.\\d+\\S*)\\s*$");
    /** The loader's and JNA's words for a function the library lacks: a version mismatch, NCCL prefix or not. */
    private static final Pattern MISSING_SYMBOL = Pattern.compile(
            "undefined symbol:?\\s*\\w+|Error looking up function '\\w+'|symbol lookup error");

    private final List<Line> lines = new ArrayList<>();
    private final Map<String, String> versions = new LinkedHashMap<>();
    private int read;

    static NcclLog parse(List<String> text) {
        NcclLog log = new NcclLog();
        text.forEach(log::add);
        return log;
    }

    /** Reads the next line of the log; only NCCL's lines are kept, so a log of any size fits. */
    void add(String raw) {
        int number = ++read;
        Matcher m = NCCL.matcher(raw);
        boolean nccl = m.find();
        String host = nccl ? m.group("host") : null;
        Long pid = nccl && m.group("pid") != null ? Long.valueOf(m.group("pid")) : null;
        Matcher v = VERSION.matcher(nccl ? m.group("msg") : raw);
        if ((!nccl || m.group("level").equals("INFO")) && v.find()) {
            versions.put(pid != null ? "pid " + pid + (host != null ? " on " + host : "") : "line " + number,
                    v.group("version"));
        } else if (nccl) {
            lines.add(new Line(number, raw, host, pid, m.group("dev") == null ? null : Integer.valueOf(m.group("dev")),
                    m.group("level"), m.group("msg").strip()));
        } else if (MISSING_SYMBOL.matcher(raw).find()) {
            lines.add(new Line(number, raw, null, null, null, "ERROR", raw.strip()));
        }
    }

    /** How many lines were read. */
    int read() {
        return read;
    }

    List<Line> lines() {
        return lines;
    }

    /** NCCL's version as each process printed it, by "pid N on HOST" (or "line N" without a prefix). */
    Map<String, String> versions() {
        return versions;
    }
}
