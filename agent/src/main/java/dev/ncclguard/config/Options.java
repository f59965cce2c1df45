package dev.ncclguard.config;

import dev.ncclguard.log.OneLine;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;

/**
 * The agent's options (docs/spec.md "Options"). Each key is read from the agent argument string
 * {@code key=value,key=value}, then the system property {@code ncclguard.<key>}, then the
 * environment variable {@code NCCLGUARD_<KEY>} ('-' becomes '_'), then the config file
 * ({@code config=PATH}, {@link ConfigFile}), then its default: OpenTelemetry's order (system
 * property, environment, file) under the arguments of this one JVM (docs/design.md, "Option precedence"). Values in the argument string cannot hold ',' since it
 * separates the arguments; values in the config file can. A bad key or value fails with one line
 * that names the key, the value and the choices, as the JVM does for a bad -XX flag.
 */
public final class Options {

    public enum Action {
        REPORT, CLEANUP, OFF
    }

    public enum Logging {
        STDERR, APPLICATION
    }

    /**
     * One option: its key, its default (null: none), and the choices in words for the error line;
     * {@link #value} parses its text. No lambdas, regular expressions or java.time here: this runs
     * in premain, where each costs start-up time of the application.
     */
    private record Key(String name, String defaultValue, String expected, String meaning) {
    }

    /** What the placeholders of report= and text= may be, for the error line. */
    private static final String PLACEHOLDERS = "%p, %h, %t, %{NAME}, %n or %n{MAX}";

    /** The option table: a new option is one line here, a case in {@link #value} and a typed getter below. */
    private static final List<Key> KEYS = List.of(
            new Key("action", "report", "report, cleanup or off",
                    "at exit: report only; report, then release what leaked; do nothing"),
            new Key("report", "none", "none or a file path (it may hold " + PLACEHOLDERS + ")",
                    "write the JSON report there, atomically"),
            new Key("text", "stderr", "stderr, log, none or a file path (it may hold " + PLACEHOLDERS + ")",
                    "the human-readable report (log: the application's SLF4J)"),
            new Key("exit-code", "0", "an integer from 0 to 255",
                    "when >0 and leaks were found, a JVM exiting 0 exits with it"),
            new Key("stacks", "on", "on or off", "record the Java stack that created each handle"),
            new Key("timeout", "10s", "a duration from 1ms to 24h such as 500ms, 10s or 2m",
                    "upper bound for the exit: probe, cleanup and the report write"),
            new Key("logging", "stderr", "stderr or application",
                    "where the agent's own lines go (application: the application's SLF4J)"),
            new Key("log-level", "info", "info or debug",
                    "debug: also what the agent loaded and instrumented, its native part, each tracked creation"),
            new Key("bindings", "none", "none or the path of a bindings file",
                    "maps the application's own native methods to NCCL/CUDA functions"),
            new Key("suppress", "none", "none or a readable file of KIND:PATTERN lines",
                    "known leaks: listed as suppressed, not counted"),
            new Key("pending-threshold", "60s", "a duration from 1ms to 24h such as 500ms, 10s or 2m",
                    "how long an event may stay pending before the MBean counts it"),
            // the native part (bridge.interposer, bridge.profiler)
            new Key("native", "on", "on or off", "track NCCL and CUDA calls made from native code (the interposer)"),
            new Key("native-patch", "on", "on or off",
                    "also patch the import slots of loaded libraries (after an attach, dlsym, RTLD_DEEPBIND, -z now)"),
            new Key("nccl-profiler", "on", "on or off", "the agent's library is also NCCL's profiler plugin"),
            new Key("native-dir", "tmpdir", "tmpdir (java.io.tmpdir) or the path of a directory",
                    "where the native library is extracted"),
            new Key("stack-depot", "65536", "an integer from 0 (off) to 16777216",
                    "distinct creating stacks kept (native and Java depots); past it, a new stack is not kept"));

    private static final Map<String, Key> BY_NAME = new LinkedHashMap<>();

    /** The option naming the config file: read before the others, and not itself in the table. */
    private static final String CONFIG = "config";
    private static final String CONFIG_EXPECTED = "none or the path of a properties file of options";

    static {
        for (Key k : KEYS) {
            BY_NAME.put(k.name(), k);
        }
    }

    /** The report option's "none", held as no path. */
    private static final Object NONE = new Object();

    private final Map<String, Object> values;
    private final Map<String, String> sources;
    /** Each key's value as given, for {@link #with}. */
    private final Map<String, String> texts;
    /** The config file read, or null. */
    private final String config;

    private Options(Map<String, Object> values, Map<String, String> sources, Map<String, String> texts, String config) {
        this.values = values;
        this.sources = sources;
        this.texts = texts;
        this.config = config;
    }

    /** Parses with this JVM's system properties and environment. */
    public static Options parse(String agentArgs) {
        return parse(agentArgs, systemProperties(), System.getenv());
    }

    /** This JVM's system properties {@code ncclguard.*}. */
    public static Map<String, String> systemProperties() {
        Properties props = System.getProperties();
        Map<String, String> sysProps = new HashMap<>();
        for (String name : props.stringPropertyNames()) {
            if (name.startsWith("ncclguard.")) {
                sysProps.put(name, props.getProperty(name));
            }
        }
        return sysProps;
    }

    /**
     * @param agentArgs the string after {@code -javaagent:jar=}, or null
     * @throws OptionsException on an unknown key or a bad value, with the one line to show
     */
    public static Options parse(String agentArgs, Map<String, String> sysProps, Map<String, String> env) {
        Map<String, String> fromArgs = splitArguments(agentArgs);
        String config = configFile(fromArgs, sysProps, env);
        Map<String, String> fromFile = config == null ? Collections.emptyMap()
                : ConfigFile.read(config, BY_NAME.keySet(), configSource(fromArgs, sysProps));
        Map<String, String> texts = new HashMap<>();
        Map<String, String> sources = new HashMap<>();
        for (Key key : KEYS) {
            String text;
            String source;
            String property = "ncclguard." + key.name();
            String variable = environmentName(key.name());
            if (fromArgs.containsKey(key.name())) {
                text = fromArgs.get(key.name());
                source = "argument";
            } else if (present(sysProps, property)) {
                text = sysProps.get(property);
                source = "system property " + property;
            } else if (present(env, variable)) {
                text = env.get(variable);
                source = "environment variable " + variable;
            } else if (fromFile.containsKey(key.name())) {
                text = fromFile.get(key.name());
                source = "config file " + config;
            } else {
                text = key.defaultValue();
                source = "default";
            }
            texts.put(key.name(), text);
            sources.put(key.name(), source);
        }
        return build(texts, sources, config);
    }

    /** The typed values of the texts, or the one line about the first bad one. */
    private static Options build(Map<String, String> texts, Map<String, String> sources, String config) {
        Map<String, Object> values = new HashMap<>();
        for (Key key : KEYS) {
            String text = texts.get(key.name());
            Object value = value(key.name(), text);
            if (value == null) {
                String source = sources.get(key.name());
                String from = source.equals("argument") ? "" : " (" + source + ")";
                String problem = key.name().equals("report") || key.name().equals("text") ? OutputNames.problem(text) : null;
                throw new OptionsException("ncclguard: invalid value '" + OneLine.of(text) + "' for option "
                        + key.name() + from + ": " + (problem == null ? "" : problem + "; ") + "expected " + key.expected());
            }
            values.put(key.name(), value);
        }
        return new Options(values, sources, texts, config);
    }

    /**
     * These options with the keys that {@code agentArgs} gives (itself, or through the config file it
     * names) changed, the others kept as they are: what a second attach does. System properties and
     * the environment are not read again.
     *
     * @throws OptionsException on a bad key or value, with the one line to show
     */
    public Options with(String agentArgs) {
        Map<String, String> fromArgs = splitArguments(agentArgs);
        String file = fromArgs.containsKey(CONFIG) ? configValue(fromArgs.get(CONFIG), "argument") : null;
        Map<String, String> fromFile = file == null ? Collections.emptyMap()
                : ConfigFile.read(file, BY_NAME.keySet(), "argument");
        Map<String, String> newTexts = new HashMap<>(texts);
        Map<String, String> newSources = new HashMap<>(sources);
        for (Key key : KEYS) {
            if (fromArgs.containsKey(key.name())) {
                newTexts.put(key.name(), fromArgs.get(key.name()));
                newSources.put(key.name(), "argument");
            } else if (fromFile.containsKey(key.name())) {
                newTexts.put(key.name(), fromFile.get(key.name()));
                newSources.put(key.name(), "config file " + file);
            }
        }
        return build(newTexts, newSources, fromArgs.containsKey(CONFIG) ? file : config);
    }

    /** The config file named by the argument, else the system property, else the environment; null for none. */
    private static String configFile(Map<String, String> fromArgs, Map<String, String> sysProps, Map<String, String> env) {
        String property = "ncclguard." + CONFIG;
        String variable = environmentName(CONFIG);
        if (fromArgs.containsKey(CONFIG)) {
            return configValue(fromArgs.get(CONFIG), "argument");
        }
        if (present(sysProps, property)) {
            return configValue(sysProps.get(property), "system property " + property);
        }
        if (present(env, variable)) {
            return configValue(env.get(variable), "environment variable " + variable);
        }
        return null;
    }

    private static String configSource(Map<String, String> fromArgs, Map<String, String> sysProps) {
        return fromArgs.containsKey(CONFIG) ? "argument"
                : present(sysProps, "ncclguard." + CONFIG) ? "system property ncclguard." + CONFIG
                : "environment variable " + environmentName(CONFIG);
    }

    private static String configValue(String text, String source) {
        if (text.isEmpty()) {
            String from = source.equals("argument") ? "" : " (" + source + ")";
            throw new OptionsException("ncclguard: invalid value '' for option config" + from + ": expected "
                    + CONFIG_EXPECTED);
        }
        return text.equals("none") ? null : text;
    }

    public static String environmentName(String key) {
        return "NCCLGUARD_" + key.replace('-', '_').toUpperCase(Locale.ROOT);
    }

    /**
     * The option table for people ({@code --help}, {@code help options}): key, values, default,
     * meaning, one row per option, {@code config} last; the same table the options are parsed by.
     */
    public static List<String[]> table() {
        List<String[]> rows = new ArrayList<>();
        for (Key k : KEYS) {
            rows.add(new String[] {k.name(), k.expected(), k.defaultValue(), k.meaning()});
        }
        rows.add(new String[] {CONFIG, CONFIG_EXPECTED, "none",
            "a file of the other options, below arguments, system properties and environment"});
        return rows;
    }

    /** Every option key, in the order of the documentation; {@code config} last. */
    public static List<String> keys() {
        List<String> all = new ArrayList<>(BY_NAME.keySet());
        all.add(CONFIG);
        return all;
    }

    /** The config file the options were read from; null for none. */
    public String config() {
        return config;
    }


    public Action action() {
        return (Action) values.get("action");
    }

    /** The JSON report's path as given, %p and %h unexpanded; null for none. */
    public String report() {
        Object v = values.get("report");
        return v == NONE ? null : (String) v;
    }

    /** The JSON report's path for this process; null for none. */
    public String reportPath(long pid, String host) {
        String template = report();
        return template == null ? null : expand(template, pid, host);
    }

    /** The text report's target as given: "stderr", "log", "none" or a path. */
    public String text() {
        return (String) values.get("text");
    }

    public boolean textToStderr() {
        return text().equals("stderr");
    }

    /** text=log: each leak block to the application's SLF4J (loggers dev.ncclguard.leak.*, dev.ncclguard.cleanup). */
    public boolean textToLog() {
        return text().equals("log");
    }

    /** The text report's file for this process; null when it goes to stderr, the log or nowhere. */
    public String textPath(long pid, String host) {
        String t = text();
        return t.equals("stderr") || t.equals("none") || t.equals("log") ? null : expand(t, pid, host);
    }

    public int exitCode() {
        return (Integer) values.get("exit-code");
    }

    public boolean stacks() {
        return (Boolean) values.get("stacks");
    }

    public Duration timeout() {
        return ((Timeout) values.get("timeout")).duration();
    }

    /** How long an event may stay pending before the live gauge EventsPendingTooLong counts it. */
    public Duration pendingThreshold() {
        return ((Timeout) values.get("pending-threshold")).duration();
    }

    public Logging logging() {
        return (Logging) values.get("logging");
    }

    /** log-level=debug: the agent says what it loaded, instrumented, and each handle it tracks. */
    public boolean debug() {
        return (Boolean) values.get("log-level");
    }

    /** The bindings file mapping the application's own native methods to NCCL/CUDA functions; null for none. */
    public String bindings() {
        Object v = values.get("bindings");
        return v == NONE ? null : (String) v;
    }

    /** Known leaks to list as suppressed and not count; {@link Suppressions#NONE} by default. */
    public Suppressions suppressions() {
        return (Suppressions) values.get("suppress");
    }

    /** Whether the agent's native library interposes on NCCL and CUDA calls made from native code. */
    public boolean nativeInterposer() {
        return (Boolean) values.get("native");
    }

    /**
     * Whether the native part also patches the import slots of loaded libraries (those loaded before
     * it, -z now, -fno-plt, RTLD_DEEPBIND) and hooks their dlopen and dlsym; off: only libraries
     * that bind to it through the global scope are seen.
     */
    public boolean nativePatch() {
        return (Boolean) values.get("native-patch");
    }

    /** Whether NCCL loads the agent's native library as its profiler plugin. */
    public boolean ncclProfiler() {
        return (Boolean) values.get("nccl-profiler");
    }

    /** The directory the native library is extracted under; null for java.io.tmpdir. */
    public String nativeDir() {
        String v = (String) values.get("native-dir");
        return v.equals("tmpdir") ? null : v;
    }

    /** Where {@code key}'s value came from: "argument", "system property …", "environment variable …", "default". */
    /** Distinct creating Java stacks the native part keeps for creations made from native code (0: none). */
    public long stackDepot() {
        return (Long) values.get("stack-depot");
    }

    public String source(String key) {
        return sources.get(key);
    }

    /** Replaces %p with the pid, %h with the host name and %% with %. */
    public static String expand(String template, long pid, String host) {
        StringBuilder out = new StringBuilder(template.length() + 16);
        for (int i = 0; i < template.length(); i++) {
            char c = template.charAt(i);
            if (c == '%' && i + 1 < template.length()) {
                char n = template.charAt(i + 1);
                if (n == 'p' || n == 'h' || n == '%') {
                    out.append(n == 'p' ? Long.toString(pid) : n == 'h' ? host : "%");
                    i++;
                    continue;
                }
            }
            out.append(c);
        }
        return out.toString();
    }

    @Override
    public String toString() {
        List<String> parts = new ArrayList<>();
        for (Key k : KEYS) {
            Object v = values.get(k.name());
            String shown = v == NONE ? "none"
                    : v instanceof Enum<?> e ? e.name().toLowerCase(Locale.ROOT)
                    : v instanceof Boolean b && k.name().equals("log-level") ? (b ? "debug" : "info")
                    : v instanceof Boolean b ? (b ? "on" : "off")
                    : v instanceof Timeout t ? t.duration().toMillis() + "ms"
                    : String.valueOf(v);
            parts.add(k.name() + "=" + shown);
        }
        if (config != null) {
            parts.add(CONFIG + "=" + config);
        }
        return String.join(",", parts);
    }

    // --- the argument string ---

    private static Map<String, String> splitArguments(String agentArgs) {
        if (agentArgs == null || agentArgs.isEmpty()) {
            return Collections.emptyMap();
        }
        Map<String, String> out = new HashMap<>();
        for (String piece : agentArgs.split(",", -1)) {
            if (piece.isBlank()) {
                continue;
            }
            int eq = piece.indexOf('=');
            String name = (eq < 0 ? piece : piece.substring(0, eq)).trim();
            Key key = BY_NAME.get(name);
            if (key == null && !name.equals(CONFIG)) {
                String closest = closestKey(name);
                throw new OptionsException("ncclguard: unknown option '" + OneLine.of(name) + "' ("
                        + (closest != null ? "did you mean " + closest + "? " : "") + "valid: "
                        + String.join(", ", keys()) + ")");
            }
            if (eq < 0) {
                throw new OptionsException("ncclguard: missing value for option " + name + ": expected "
                        + (key == null ? CONFIG_EXPECTED : key.expected()));
            }
            // like the JVM's flags: a key given twice takes its last value
            out.put(name, piece.substring(eq + 1));
        }
        return out;
    }

    /**
     * The option key {@code name} most likely meant: the same letters but for case, '-', '_' and
     * '.', or at most two edits away (a third of the name at most); null when none is that close.
     */
    public static String closestKey(String name) {
        String plain = letters(name);
        String best = null;
        int bestDistance = Integer.MAX_VALUE;
        for (String key : BY_NAME.keySet()) {
            int d = distance(plain, letters(key));
            if (d < bestDistance) {
                best = key;
                bestDistance = d;
            }
        }
        return bestDistance <= Math.min(2, Math.max(1, plain.length() / 3)) ? best : null;
    }

    private static String letters(String name) {
        StringBuilder out = new StringBuilder(name.length());
        for (int i = 0; i < name.length(); i++) {
            char c = name.charAt(i);
            if (c != '-' && c != '_' && c != '.') {
                out.append(Character.toLowerCase(c));
            }
        }
        return out.toString();
    }

    /** Levenshtein distance; keys are short, so the plain table. */
    private static int distance(String a, String b) {
        int[] prev = new int[b.length() + 1];
        int[] cur = new int[b.length() + 1];
        for (int j = 0; j <= b.length(); j++) {
            prev[j] = j;
        }
        for (int i = 1; i <= a.length(); i++) {
            cur[0] = i;
            for (int j = 1; j <= b.length(); j++) {
                int cost = a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1;
                cur[j] = Math.min(Math.min(cur[j - 1] + 1, prev[j] + 1), prev[j - 1] + cost);
            }
            int[] t = prev;
            prev = cur;
            cur = t;
        }
        return prev[b.length()];
    }

    private static boolean present(Map<String, String> map, String name) {
        // an empty variable is how shells usually spell "unset"
        String v = map == null ? null : map.get(name);
        return v != null && !v.isEmpty();
    }

    // --- value parsers: the typed value, or null when the text is not a valid choice ---

    private static Object value(String key, String text) {
        switch (key) {
            case "action":
                return word(text, Action.values());
            case "report":
                return OutputNames.problem(text) == null ? pathOrNone(text) : null;
            case "bindings":
                return pathOrNone(text);
            case "text":
                return OutputNames.problem(text) == null ? nonEmpty(text) : null;
            case "exit-code":
                return exitCode(text);
            case "stacks":
            case "native":
            case "native-patch":
            case "nccl-profiler":
                return onOff(text);
            case "native-dir":
                return nonEmpty(text);
            case "stack-depot":
                return stackDepot(text);
            case "timeout":
            case "pending-threshold":
                return Timeout.parse(text);
            case "logging":
                return word(text, Logging.values());
            case "log-level":
                // info, the agent's usual lines; debug, also what it loaded, instrumented and tracks
                return text.equals("debug") ? Boolean.TRUE : text.equals("info") ? Boolean.FALSE : null;
            case "suppress":
                return Suppressions.option(text);
            default:
                throw new IllegalStateException("option " + key + " has no parser");
        }
    }

    private static <E extends Enum<E>> E word(String text, E[] choices) {
        for (E e : choices) {
            if (e.name().toLowerCase(Locale.ROOT).equals(text)) {
                return e;
            }
        }
        return null;
    }

    private static Object onOff(String text) {
        return text.equals("on") ? Boolean.TRUE : text.equals("off") ? Boolean.FALSE : null;
    }

    private static Object pathOrNone(String text) {
        return text.equals("none") ? NONE : nonEmpty(text);
    }

    private static Object nonEmpty(String text) {
        return text.isEmpty() ? null : text;
    }

    private static Object exitCode(String text) {
        long code = digits(text, 0, text.length(), 3);
        return code >= 0 && code <= 255 ? (int) code : null;
    }

    /** The bound on distinct creating stacks the native part stores; 2^24 of them at most (their ids are 32-bit). */
    private static final long MAX_STACK_DEPOT = 1L << 24;

    private static Object stackDepot(String text) {
        long n = digits(text, 0, text.length(), 8);
        return n >= 0 && n <= MAX_STACK_DEPOT ? (Long) n : null;
    }

    /** The value of text[from, to) if it is 1 to {@code max} ASCII digits, else -1. */
    private static long digits(String text, int from, int to, int max) {
        if (to <= from || to - from > max) {
            return -1;
        }
        long n = 0;
        for (int i = from; i < to; i++) {
            char c = text.charAt(i);
            if (c < '0' || c > '9') {
                return -1;
            }
            n = n * 10 + (c - '0');
        }
        return n;
    }

    /** The timeout as given (1 to 12 digits and ms, s, m or h); a Duration only when asked, at exit. */
    private static final long MAX_TIMEOUT_MILLIS = 24L * 3_600_000L;

    private record Timeout(long amount, char unit) {
        static Timeout parse(String text) {
            int digitsEnd = 0;
            while (digitsEnd < text.length() && text.charAt(digitsEnd) >= '0' && text.charAt(digitsEnd) <= '9') {
                digitsEnd++;
            }
            long n = digits(text, 0, digitsEnd, 12);
            String unit = text.substring(digitsEnd);
            if (n <= 0) {
                return null;
            }
            Timeout t;
            switch (unit) {
                case "ms":
                    t = new Timeout(n, 'M');
                    break;
                case "s":
                case "m":
                case "h":
                    t = new Timeout(n, unit.charAt(0));
                    break;
                default:
                    return null;
            }
            // 12 digits of hours still fit a long of milliseconds; more than a day is a typo, and
            // nanoseconds of it added to System.nanoTime() at exit must not overflow
            return t.millis() <= MAX_TIMEOUT_MILLIS ? t : null;
        }

        long millis() {
            switch (unit) {
                case 'M':
                    return amount;
                case 's':
                    return amount * 1000L;
                case 'm':
                    return amount * 60_000L;
                default:
                    return amount * 3_600_000L;
            }
        }

        Duration duration() {
            switch (unit) {
                case 'M':
                    return Duration.ofMillis(amount);
                case 's':
                    return Duration.ofSeconds(amount);
                case 'm':
                    return Duration.ofMinutes(amount);
                default:
                    return Duration.ofHours(amount);
            }
        }
    }
}
