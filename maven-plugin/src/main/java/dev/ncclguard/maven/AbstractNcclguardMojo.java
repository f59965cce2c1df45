package dev.ncclguard.maven;

import java.io.File;
import java.util.Map;
import org.apache.maven.artifact.Artifact;
import org.apache.maven.plugin.AbstractMojo;
import org.apache.maven.plugin.MojoExecutionException;
import org.apache.maven.plugins.annotations.Parameter;
import org.apache.maven.project.MavenProject;

/** What the goals share: the project, the reports' directory, the agent jar, skip. */
abstract class AbstractNcclguardMojo extends AbstractMojo {
    static final String AGENT_ARTIFACT = "dev.ncclguard:ncclguard-agent";

    @Parameter(defaultValue = "${project}", readonly = true, required = true)
    MavenProject project;

    /** The plugin's own dependencies, the agent jar among them. */
    @Parameter(property = "plugin.artifactMap", required = true, readonly = true)
    Map<String, Artifact> pluginArtifactMap;

    /** Where the test JVMs write their reports (one JSON and one text file each), and where check and report read them. */
    @Parameter(property = "ncclguard.reportDirectory", defaultValue = "${project.build.directory}/ncclguard")
    File reportDirectory;

    /** Skips the goal (prepare-agent then sets no agent: the property is left as it was, or empty). */
    @Parameter(property = "ncclguard.skip", defaultValue = "false")
    boolean skip;

    File agentJar() throws MojoExecutionException {
        Artifact agent = pluginArtifactMap == null ? null : pluginArtifactMap.get(AGENT_ARTIFACT);
        File jar = agent == null ? null : agent.getFile();
        if (jar == null || !jar.isFile()) {
            throw new MojoExecutionException("ncclguard: the agent jar (" + AGENT_ARTIFACT
                    + ") is not among the plugin's dependencies; do not exclude it from the plugin");
        }
        return jar;
    }

    /** The JSON reports of this build's test JVMs (the agent's names), oldest name first. */
    File[] reports() {
        File[] files = reportDirectory.listFiles((dir, name) -> name.startsWith("ncclguard-") && name.endsWith(".json"));
        if (files == null) {
            return new File[0];
        }
        java.util.Arrays.sort(files);
        return files;
    }

    /** Each line the agent's command printed, into the build's log at its level. */
    void log(AgentCommands.Result result, boolean failed) {
        for (String line : result.out().split("\n")) {
            if (line.isEmpty()) {
                continue;
            }
            if (failed && (line.startsWith("LEAKS") || line.startsWith("BAD") || line.contains("FAILED"))) {
                getLog().error(line);
            } else {
                getLog().info(line);
            }
        }
        for (String line : result.err().split("\n")) {
            if (!line.isEmpty()) {
                getLog().error(line);
            }
        }
    }
}
