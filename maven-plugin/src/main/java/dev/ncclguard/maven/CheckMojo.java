package dev.ncclguard.maven;

import java.io.File;
import java.util.ArrayList;
import java.util.List;
import org.apache.maven.plugin.MojoExecutionException;
import org.apache.maven.plugin.MojoFailureException;
import org.apache.maven.plugins.annotations.LifecyclePhase;
import org.apache.maven.plugins.annotations.Mojo;
import org.apache.maven.plugins.annotations.Parameter;
import org.apache.maven.plugins.annotations.ResolutionScope;

/**
 * Fails the build when a test JVM left a communicator, an event or a stream behind, or when a
 * report is malformed or truncated: the agent jar's own {@code check} command, run in its loader,
 * on the reports in reportDirectory. Leaks a suppressions file matched are listed, not counted.
 */
@Mojo(name = "check", defaultPhase = LifecyclePhase.VERIFY, threadSafe = true,
        requiresDependencyResolution = ResolutionScope.NONE)
public class CheckMojo extends AbstractNcclguardMojo {
    /** Also write the verdict as JUnit XML (a testcase per report, a failure per leak), for CI report pages. */
    @Parameter(property = "ncclguard.junitXml", defaultValue = "${project.build.directory}/ncclguard/ncclguard-check.xml")
    File junitXml;

    /** Report leaks and bad reports without failing the build. */
    @Parameter(property = "ncclguard.haltOnFailure", defaultValue = "true")
    boolean haltOnFailure;

    @Override
    public void execute() throws MojoExecutionException, MojoFailureException {
        if (skip) {
            getLog().info("ncclguard: check skipped");
            return;
        }
        File[] reports = reports();
        if (reports.length == 0) {
            getLog().info("ncclguard: no reports in " + reportDirectory + " (no test JVM ran under the agent): nothing to check");
            return;
        }
        List<String> args = new ArrayList<>(List.of("check"));
        for (File r : reports) {
            args.add(r.getAbsolutePath());
        }
        if (junitXml != null) {
            args.add("--junit-xml=" + junitXml.getAbsolutePath());
        }
        AgentCommands.Result result;
        try {
            result = AgentCommands.run(agentJar(), args.toArray(new String[0]));
        } catch (ReflectiveOperationException | RuntimeException e) {
            throw new MojoExecutionException("ncclguard: check could not run: " + e.getMessage(), e);
        }
        log(result, result.status() != 0);
        if (result.status() == 2) {
            throw new MojoExecutionException("ncclguard: check could not read its input (above)");
        }
        if (result.status() != 0) {
            String verdict = lastLine(result.out());
            if (haltOnFailure) {
                throw new MojoFailureException(verdict + " (reports in " + reportDirectory + ")");
            }
            getLog().warn(verdict + " (haltOnFailure is false: the build goes on)");
        }
    }

    private static String lastLine(String text) {
        String[] lines = text.strip().split("\n");
        return lines.length == 0 ? "ncclguard check: FAILED" : lines[lines.length - 1];
    }
}
