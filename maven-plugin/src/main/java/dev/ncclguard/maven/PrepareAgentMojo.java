package dev.ncclguard.maven;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;
import org.apache.maven.plugin.MojoExecutionException;
import org.apache.maven.plugins.annotations.LifecyclePhase;
import org.apache.maven.plugins.annotations.Mojo;
import org.apache.maven.plugins.annotations.Parameter;
import org.apache.maven.plugins.annotations.ResolutionScope;

/**
 * Sets a property (argLine, which surefire and failsafe read) to {@code -javaagent:} the ncclguard
 * agent, so that every test JVM writes its report into {@code reportDirectory} at exit, one file per
 * JVM ({@code ncclguard-PID-N.json}). Users who set their own argLine keep it by writing
 * {@code @{argLine}} in it, as with JaCoCo. The agent's options go into a config file beside the
 * reports ({@code agent.properties}), so that a value may hold ','.
 */
@Mojo(name = "prepare-agent", defaultPhase = LifecyclePhase.INITIALIZE, threadSafe = true,
        requiresDependencyResolution = ResolutionScope.NONE)
public class PrepareAgentMojo extends AbstractNcclguardMojo {
    /** The property to set; {@code argLine} is the one surefire and failsafe read. */
    @Parameter(property = "ncclguard.propertyName", defaultValue = "argLine")
    String propertyName;

    /**
     * The agent's options (docs/usage.md, "Options"), {@code <action>cleanup</action>} and so on;
     * {@code report} and {@code text} replace the plugin's per-JVM names in reportDirectory.
     */
    @Parameter
    Map<String, String> options;

    /** A suppressions file: the leaks it matches are listed and not counted, by the agent and so by check. */
    @Parameter(property = "ncclguard.suppressions")
    File suppressions;

    /**
     * Keep the reports an earlier build left in reportDirectory. By default they are removed here, so
     * that check judges this build's test JVMs only (a build without {@code clean} after a fix passes).
     */
    @Parameter(property = "ncclguard.append", defaultValue = "false")
    boolean append;

    @Override
    public void execute() throws MojoExecutionException {
        Properties properties = project.getProperties();
        if (skip) {
            if (properties.getProperty(propertyName) == null) {
                properties.setProperty(propertyName, ""); // so that @{argLine} still resolves
            }
            getLog().info("ncclguard: skipped; " + propertyName + " left without the agent");
            return;
        }
        File jar = agentJar();
        if (suppressions != null && !suppressions.isFile()) {
            throw new MojoExecutionException("ncclguard: the suppressions file " + suppressions
                    + " does not exist; fix <suppressions> or remove it");
        }
        File config = new File(reportDirectory, "agent.properties");
        try {
            Files.createDirectories(reportDirectory.toPath());
            if (!append) {
                removeEarlierReports();
            }
            Files.writeString(config.toPath(), AgentArgLine.configFile(reportDirectory, new LinkedHashMap<>(
                    options == null ? Map.of() : options), suppressions), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new MojoExecutionException("ncclguard: cannot write " + config + ": " + e.getMessage()
                    + "; set <reportDirectory> to a writable directory", e);
        }
        String value = AgentArgLine.prepend(properties.getProperty(propertyName), jar, config);
        properties.setProperty(propertyName, value);
        getLog().info("ncclguard: " + propertyName + " set to " + value);
    }

    private void removeEarlierReports() throws IOException {
        File[] old = reportDirectory.listFiles((dir, name) -> name.startsWith("ncclguard-")
                && (name.endsWith(".json") || name.endsWith(".txt")));
        if (old == null) {
            return;
        }
        for (File f : old) {
            Files.deleteIfExists(f.toPath());
        }
        if (old.length > 0) {
            getLog().info("ncclguard: removed " + old.length + " report file(s) of an earlier build from "
                    + reportDirectory + " (<append>true</append> keeps them)");
        }
    }
}
