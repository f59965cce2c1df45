package dev.ncclguard.maven;

import java.io.File;
import java.util.List;
import java.util.Map;

/**
 * The {@code -javaagent} argument prepare-agent puts into the test JVMs' command line, and the
 * config file that carries the options (so that a value may hold ',', which separates agent
 * arguments). Kept apart from Maven's types so that it is tested as it is.
 */
final class AgentArgLine {
    private AgentArgLine() {
    }

    /** The agent's name for each test JVM's report: a number after the pid keeps a reused pid's report. */
    static final String REPORT_NAME = "ncclguard-%p-%n.json";
    /** The readable report beside it: the agent gives it the number its JSON report took. */
    static final String TEXT_NAME = "ncclguard-%p-%n.txt";

    /**
     * The options file: the report and text paths in {@code reportDirectory}, then the user's
     * options (which may replace them), then the suppressions file.
     */
    static String configFile(File reportDirectory, Map<String, String> options, File suppressions) {
        StringBuilder out = new StringBuilder("# written by ncclguard-maven-plugin's prepare-agent\n");
        line(out, "report", new File(reportDirectory, REPORT_NAME).getAbsolutePath());
        line(out, "text", new File(reportDirectory, TEXT_NAME).getAbsolutePath());
        if (options != null) {
            for (Map.Entry<String, String> e : options.entrySet()) {
                if (e.getValue() != null) {
                    line(out, e.getKey(), e.getValue());
                }
            }
        }
        if (suppressions != null) {
            line(out, "suppress", suppressions.getAbsolutePath());
        }
        return out.toString();
    }

    /**
     * {@code -javaagent:JAR=config=FILE} before what the property held already (the user's own
     * flags, kept as JaCoCo keeps them), quoted when a path holds white space.
     */
    static String prepend(String previous, File agentJar, File config) {
        String arg = "-javaagent:" + agentJar.getAbsolutePath() + "=config=" + config.getAbsolutePath();
        if (arg.chars().anyMatch(Character::isWhitespace)) {
            arg = '"' + arg + '"';
        }
        return previous == null || previous.isBlank() ? arg : arg + " " + previous.strip();
    }

    /** The plugin's own parameters, which are Maven's business and not the agent's options. */
    static final java.util.Set<String> PLUGIN_PARAMETERS = java.util.Set.of("ncclguard.skip",
            "ncclguard.reportDirectory", "ncclguard.propertyName", "ncclguard.suppressions", "ncclguard.append",
            "ncclguard.emulator", "ncclguard.emulatorDirectory", "ncclguard.junitXml", "ncclguard.haltOnFailure",
            "ncclguard.allowNoReports", "ncclguard.requireFull", "ncclguard.outputDirectory");

    /**
     * {@code -Dncclguard.KEY=VALUE} for each {@code ncclguard.*} property given to Maven on its command
     * line ({@code mvn -Dncclguard.text=none verify}), sorted: on the test JVM's command line they are
     * system properties when the agent starts, above the config file (docs/spec.md, precedence).
     * Surefire's own copy of Maven's properties comes too late for that: it sets them after the agent
     * read its options. The agent judges the keys (a typo gets its "did you mean" line there).
     */
    static List<String> commandLineOptions(java.util.Properties userProperties) {
        List<String> out = new java.util.ArrayList<>();
        for (String name : new java.util.TreeSet<>(userProperties.stringPropertyNames())) {
            if (name.startsWith("ncclguard.") && !PLUGIN_PARAMETERS.contains(name) && !name.startsWith("ncclguard.junit.")
                    && !name.startsWith("ncclguard.it.") && !name.startsWith("ncclguard.test.")) {
                String flag = "-D" + name + "=" + userProperties.getProperty(name);
                out.add(flag.chars().anyMatch(Character::isWhitespace) ? '"' + flag + '"' : flag);
            }
        }
        return out;
    }

    /** A properties line; backslashes, line breaks and leading spaces escaped as the format wants. */
    private static void line(StringBuilder out, String key, String value) {
        out.append(escape(key, true)).append('=').append(escape(value, false)).append('\n');
    }

    private static String escape(String text, boolean key) {
        StringBuilder out = new StringBuilder(text.length());
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            switch (c) {
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                case ' ' -> out.append(key || i == 0 ? "\\ " : " ");
                case '=', ':', '#', '!' -> out.append(key || i == 0 ? "\\" + c : String.valueOf(c));
                default -> out.append(c);
            }
        }
        return out.toString();
    }
}
