package dev.ncclguard.maven;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.maven.execution.MavenSession;
import org.apache.maven.plugin.MojoExecutionException;
import org.apache.maven.plugins.annotations.Component;
import org.apache.maven.plugins.annotations.LifecyclePhase;
import org.apache.maven.plugins.annotations.Mojo;
import org.apache.maven.plugins.annotations.Parameter;
import org.apache.maven.plugins.annotations.ResolutionScope;
import org.eclipse.aether.RepositorySystem;
import org.eclipse.aether.RepositorySystemSession;
import org.eclipse.aether.artifact.DefaultArtifact;
import org.eclipse.aether.repository.RemoteRepository;
import org.eclipse.aether.resolution.ArtifactRequest;
import org.eclipse.aether.resolution.ArtifactResolutionException;

/**
 * Sets a property (argLine, which surefire and failsafe read) to {@code -javaagent:} the ncclguard
 * agent, so that every test JVM writes its report into {@code reportDirectory} at exit, one file per
 * JVM ({@code ncclguard-PID-N.json}). Users who set their own argLine keep it by writing
 * {@code @{argLine}} in it, as with JaCoCo. The agent's options go into a config file beside the
 * reports ({@code agent.properties}), so that a value may hold ','. With {@code emulator}, the test
 * JVMs also get the project's CPU emulator of NCCL and CUDA, by its Maven coordinates alone.
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

    /**
     * Put the emulator of NCCL and the CUDA runtime under the test JVMs, for a machine without a GPU:
     * {@code dev.ncclguard:ncclguard-emulator:<this plugin's version>:jar:linux-x86_64} is resolved
     * like any artifact, unpacked into {@code emulatorDirectory}, and {@code -Djna.library.path=} that
     * directory is added to the property. The property {@code ncclguard.emulator.dir} names it too,
     * for {@code <environmentVariables><LD_LIBRARY_PATH>${ncclguard.emulator.dir}</LD_LIBRARY_PATH>}
     * (JNI libraries linked against libnccl.so.2, which only the dynamic loader finds).
     */
    @Parameter(property = "ncclguard.emulator", defaultValue = "false")
    boolean emulator;

    /** Where the emulator's libraries are unpacked. */
    @Parameter(property = "ncclguard.emulatorDirectory", defaultValue = "${project.build.directory}/ncclguard-emulator")
    File emulatorDirectory;

    @Parameter(defaultValue = "${session}", readonly = true, required = true)
    MavenSession session;

    @Component
    RepositorySystem repositorySystem;

    @Parameter(defaultValue = "${repositorySystemSession}", readonly = true, required = true)
    RepositorySystemSession repositorySession;

    @Parameter(defaultValue = "${project.remoteProjectRepositories}", readonly = true, required = true)
    List<RemoteRepository> remoteRepositories;

    @Parameter(defaultValue = "${plugin.version}", readonly = true, required = true)
    String pluginVersion;

    @Override
    public void execute() throws MojoExecutionException {
        Properties properties = project.getProperties();
        String emulatorFlag = emulator ? emulator() : null;
        if (skip) {
            if (properties.getProperty(propertyName) == null) {
                properties.setProperty(propertyName, ""); // so that @{argLine} still resolves
            }
            if (emulatorFlag != null) {
                properties.setProperty(propertyName, (properties.getProperty(propertyName) + " " + emulatorFlag).strip());
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
        List<String> overrides = AgentArgLine.commandLineOptions(session.getUserProperties());
        if (!overrides.isEmpty()) {
            value = value + " " + String.join(" ", overrides);
            getLog().info("ncclguard: from Maven's command line, over the options file: " + String.join(" ", overrides));
        }
        if (emulatorFlag != null) {
            value = value + " " + emulatorFlag;
        }
        properties.setProperty(propertyName, value);
        getLog().info("ncclguard: " + propertyName + " set to " + value);
    }

    /** Resolves and unpacks the emulator; its JNA flag for the property. */
    private String emulator() throws MojoExecutionException {
        String unsupported = EmulatorLibraries.unsupported(System.getProperty("os.name"), System.getProperty("os.arch"));
        if (unsupported != null) {
            throw new MojoExecutionException(unsupported);
        }
        String coordinates = EmulatorLibraries.GROUP + ":" + EmulatorLibraries.ARTIFACT + ":jar:"
                + EmulatorLibraries.CLASSIFIER + ":" + pluginVersion;
        File jar;
        try {
            jar = repositorySystem.resolveArtifact(repositorySession, new ArtifactRequest(new DefaultArtifact(coordinates),
                    remoteRepositories, null)).getArtifact().getFile();
        } catch (ArtifactResolutionException e) {
            throw new MojoExecutionException("ncclguard: <emulator>true</emulator> needs " + coordinates
                    + ", which cannot be resolved: " + e.getMessage(), e);
        }
        try {
            List<String> names = EmulatorLibraries.unpack(jar, emulatorDirectory);
            getLog().info("ncclguard: emulator " + coordinates + " unpacked into " + emulatorDirectory + " ("
                    + String.join(", ", names) + ")");
        } catch (IOException e) {
            throw new MojoExecutionException("ncclguard: cannot unpack " + jar + " into " + emulatorDirectory + ": "
                    + e.getMessage() + "; set <emulatorDirectory> to a writable directory", e);
        }
        project.getProperties().setProperty("ncclguard.emulator.dir", emulatorDirectory.getAbsolutePath());
        return EmulatorLibraries.jnaFlag(emulatorDirectory);
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
