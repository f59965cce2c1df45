package dev.ncclguard.maven;

import java.util.ArrayList;
import java.util.List;
import org.apache.maven.model.Plugin;
import org.apache.maven.model.PluginExecution;
import org.apache.maven.project.MavenProject;
import org.codehaus.plexus.util.xml.Xpp3Dom;

/** The test plugins' own {@code <argLine>}s that drop the agent prepare-agent put in the property. */
final class ArgLines {
    private static final List<String> TEST_PLUGINS = List.of("maven-surefire-plugin", "maven-failsafe-plugin");

    private ArgLines() {
    }

    /** One line per such {@code <argLine>}, naming the fix: {@code @{argLine}} in front of it. */
    static List<String> replaced(MavenProject project, String property) {
        List<String> out = new ArrayList<>();
        for (Plugin plugin : project.getBuildPlugins()) {
            if (!TEST_PLUGINS.contains(plugin.getArtifactId())) {
                continue;
            }
            List<Object> configurations = new ArrayList<>();
            configurations.add(plugin.getConfiguration());
            for (PluginExecution e : plugin.getExecutions()) {
                configurations.add(e.getConfiguration());
            }
            for (Object c : configurations) {
                String line = argLine(c);
                String fix = line == null ? null : fix(line, property);
                String message = fix == null ? null : "ncclguard: " + plugin.getArtifactId() + fix;
                if (message != null && !out.contains(message)) {
                    out.add(message); // a plugin's configuration repeats in its executions'
                }
            }
        }
        return out;
    }

    /** "'s <argLine>X</argLine> replaces ...: write <argLine>@{argLine} X</argLine>", or null when it keeps the agent. */
    static String fix(String argLine, String property) {
        if (argLine.contains("@{" + property + "}") || argLine.contains("${" + property + "}")) {
            return null;
        }
        return "'s <argLine>" + argLine.strip() + "</argLine> replaces the agent that prepare-agent put in the property "
                + property + ": write <argLine>@{" + property + "} " + argLine.strip() + "</argLine>";
    }

    private static String argLine(Object configuration) {
        if (configuration instanceof Xpp3Dom dom) {
            Xpp3Dom child = dom.getChild("argLine");
            return child == null ? null : child.getValue();
        }
        return null;
    }
}
