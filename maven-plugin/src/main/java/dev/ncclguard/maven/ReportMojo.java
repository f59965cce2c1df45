package dev.ncclguard.maven;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import org.apache.maven.plugin.MojoExecutionException;
import org.apache.maven.plugins.annotations.LifecyclePhase;
import org.apache.maven.plugins.annotations.Mojo;
import org.apache.maven.plugins.annotations.Parameter;
import org.apache.maven.plugins.annotations.ResolutionScope;

/**
 * The agent jar's {@code merge} of the build's reports: its text into {@code merge.txt} and its
 * HTML page into {@code merge.html} beside the reports. It passes no verdict (check does): a
 * merge that finds leaks still writes both files and lets the build go on.
 */
@Mojo(name = "report", defaultPhase = LifecyclePhase.VERIFY, threadSafe = true,
        requiresDependencyResolution = ResolutionScope.NONE)
public class ReportMojo extends AbstractNcclguardMojo {
    /** Where the merge's text and page go. */
    @Parameter(property = "ncclguard.outputDirectory", defaultValue = "${project.build.directory}/ncclguard")
    File outputDirectory;

    @Override
    public void execute() throws MojoExecutionException {
        if (skip) {
            getLog().info("ncclguard: report skipped");
            return;
        }
        File[] reports = reports();
        if (reports.length == 0) {
            getLog().info("ncclguard: no reports in " + reportDirectory + ": no merge written");
            return;
        }
        File html = new File(outputDirectory, "merge.html");
        File text = new File(outputDirectory, "merge.txt");
        List<String> args = new ArrayList<>(List.of("merge", "--allow-missing-ranks", "--html=" + html.getAbsolutePath()));
        for (File r : reports) {
            args.add(r.getAbsolutePath());
        }
        AgentCommands.Result result;
        try {
            result = AgentCommands.run(agentJar(), args.toArray(new String[0]));
            Files.createDirectories(outputDirectory.toPath());
            Files.writeString(text.toPath(), result.out(), StandardCharsets.UTF_8);
        } catch (ReflectiveOperationException | IOException | RuntimeException e) {
            throw new MojoExecutionException("ncclguard: report could not run: " + e.getMessage(), e);
        }
        if (result.status() == 2) {
            log(result, true);
            throw new MojoExecutionException("ncclguard: merge could not read its input (above)");
        }
        String[] lines = result.out().strip().split("\n");
        getLog().info(lines[lines.length - 1]);
        getLog().info("ncclguard: merge of " + reports.length + " report(s) in " + text + " and " + html);
    }
}
