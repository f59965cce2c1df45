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

    /**
     * Pass when tests ran but no test JVM wrote a report (they ran without the agent on purpose). By
     * default that fails: a project whose own {@code <argLine>} lacks {@code @{argLine}} loses the
     * agent, and a check of no report would pass a leaky build.
     */
    @Parameter(property = "ncclguard.allowNoReports", defaultValue = "false")
    boolean allowNoReports;

    /** Fail a report of an agent attached to a running JVM: it saw the JVM only since the attach. */
    @Parameter(property = "ncclguard.requireFull", defaultValue = "false")
    boolean requireFull;

    /**
     * The test runners' XML results (TEST-*.xml), which say that tests ran; by default
     * target/surefire-reports and target/failsafe-reports.
     */
    @Parameter
    List<File> testResults;

    @Override
    public void execute() throws MojoExecutionException, MojoFailureException {
        if (skip) {
            getLog().info("ncclguard: check skipped");
            return;
        }
        File[] reports = reports();
        List<String> args = new ArrayList<>(List.of("check"));
        if (reports.length == 0) {
            List<File> ran = testResultsOfThisBuild();
            if (ran.isEmpty()) {
                getLog().info("ncclguard: no report in " + reportDirectory + " and no test ran in this build: nothing"
                        + " to check");
                return;
            }
            // the CLI's verdict: tests ran and no test JVM wrote a report, the fix in one line
            args.add(reportDirectory.getAbsolutePath());
            for (File dir : ran) {
                args.add("--test-results=" + dir.getAbsolutePath());
            }
            if (allowNoReports) {
                args.add("--allow-no-reports");
            }
        } else {
            for (File r : reports) {
                args.add(r.getAbsolutePath());
            }
            if (junitXml != null) {
                args.add("--junit-xml=" + junitXml.getAbsolutePath());
            }
        }
        if (requireFull) {
            args.add("--require-full");
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
            if (reports.length == 0) {
                for (String line : ArgLines.replaced(project, "argLine")) {
                    getLog().error(line);
                }
            }
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

    /**
     * The directories of test results written by this build: TEST-*.xml no older than the options
     * file prepare-agent wrote at its start (an earlier build's results, left without clean, do not
     * count), or any when prepare-agent did not run.
     */
    private List<File> testResultsOfThisBuild() {
        List<File> dirs = testResults != null ? testResults : List.of(
                new File(project.getBuild().getDirectory(), "surefire-reports"),
                new File(project.getBuild().getDirectory(), "failsafe-reports"));
        File options = new File(reportDirectory, "agent.properties");
        long since = options.isFile() ? options.lastModified() : 0;
        List<File> out = new ArrayList<>();
        for (File dir : dirs) {
            File[] ran = dir.listFiles((d, name) -> name.startsWith("TEST-") && name.endsWith(".xml"));
            if (ran != null && java.util.Arrays.stream(ran).anyMatch(f -> f.lastModified() >= since)) {
                out.add(dir);
            }
        }
        return out;
    }
}
