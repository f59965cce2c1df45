package dev.ncclguard.config;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

/**
 * System properties {@code ncclguard.*} and environment variables {@code NCCLGUARD_*} that are no
 * option: most likely a typo ({@code -Dncclguard.exitcode=3}), silently ignored otherwise. Each
 * gets one warning line naming the closest valid key; nothing stops, as the JVM does for an
 * unknown {@code -D}. The Maven plugin's parameters ({@code -Dncclguard.skip}, ...) are known.
 */
public final class StrayNames {
    private static final String PROPERTY = "ncclguard.";
    private static final String VARIABLE = "NCCLGUARD_";
    /** Names of the project that are no agent option: the samples' emulator folder, the agent's own marks. */
    private static final List<String> OTHER_PROPERTIES = List.of("ncclguard.emu", "ncclguard.installed",
            "ncclguard.once.overflow",
            // ncclguard-maven-plugin's parameters, which a build may also hand to its test JVMs
            "ncclguard.skip", "ncclguard.reportDirectory", "ncclguard.propertyName", "ncclguard.suppressions",
            "ncclguard.append", "ncclguard.emulator", "ncclguard.emulatorDirectory", "ncclguard.emulator.dir",
            "ncclguard.junitXml", "ncclguard.haltOnFailure", "ncclguard.allowNoReports", "ncclguard.requireFull",
            "ncclguard.outputDirectory");
    private static final List<String> OTHER_PROPERTY_PREFIXES = List.of("ncclguard.junit.", "ncclguard.test.",
            "ncclguard.it.");
    /**
     * Variables of the project that are no agent option: the samples' emulator folder, and those the
     * native part reads itself (its exit line of counts, its stack memo switch, the application's
     * profiler plugin it stands in front of, the counting build's plugin mask, its tests' switches).
     */
    private static final List<String> OTHER_VARIABLES = List.of("NCCLGUARD_EMU", "NCCLGUARD_NATIVE_DEBUG",
            "NCCLGUARD_NATIVE_MEMO", "NCCLGUARD_USER_PROFILER_PLUGIN", "NCCLGUARD_PROF_MASK");
    private static final String TEST_VARIABLES = "NCCLGUARD_TEST_";

    private StrayNames() {
    }

    /** One warning line per stray name, sorted, without the "ncclguard: " prefix of the logger. */
    public static List<String> warnings(Map<String, String> sysProps, Map<String, String> env) {
        List<String> out = new ArrayList<>();
        List<String> keys = Options.keys();
        if (sysProps != null) {
            for (String name : new TreeSet<>(sysProps.keySet())) {
                if (!name.startsWith(PROPERTY) || OTHER_PROPERTIES.contains(name) || otherPrefix(name)) {
                    continue;
                }
                String key = name.substring(PROPERTY.length());
                if (!keys.contains(key)) {
                    String closest = Options.closestKey(key);
                    out.add("system property " + name + " is no option and is ignored"
                            + (closest != null ? "; did you mean " + PROPERTY + closest + "?" : valid(PROPERTY, keys, false)));
                }
            }
        }
        if (env != null) {
            for (String name : new TreeSet<>(env.keySet())) {
                if (!name.startsWith(VARIABLE) || OTHER_VARIABLES.contains(name) || name.startsWith(TEST_VARIABLES)) {
                    continue;
                }
                boolean known = false;
                for (String key : keys) {
                    known |= Options.environmentName(key).equals(name);
                }
                if (!known) {
                    String closest = Options.closestKey(name.substring(VARIABLE.length()));
                    out.add("environment variable " + name + " is no option and is ignored"
                            + (closest != null ? "; did you mean " + Options.environmentName(closest) + "?"
                            : valid(VARIABLE, keys, true)));
                }
            }
        }
        return out;
    }

    private static boolean otherPrefix(String name) {
        for (String prefix : OTHER_PROPERTY_PREFIXES) {
            if (name.startsWith(prefix)) {
                return true;
            }
        }
        return false;
    }

    private static String valid(String prefix, List<String> keys, boolean environment) {
        StringBuilder out = new StringBuilder(" (valid: ");
        for (int i = 0; i < keys.size(); i++) {
            out.append(i == 0 ? "" : ", ").append(environment ? Options.environmentName(keys.get(i)) : prefix + keys.get(i));
        }
        return out.append(')').toString();
    }
}
