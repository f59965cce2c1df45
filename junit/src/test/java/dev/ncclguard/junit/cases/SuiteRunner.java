package dev.ncclguard.junit.cases;

import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.launcher.LauncherDiscoveryRequest;
import org.junit.platform.launcher.TestExecutionListener;
import org.junit.platform.launcher.TestIdentifier;
import org.junit.platform.launcher.core.LauncherDiscoveryRequestBuilder;
import org.junit.platform.launcher.core.LauncherFactory;

/**
 * The child JVM's main: runs the named case classes with the JUnit Platform Launcher and writes
 * one line per test and class: {@code NAME<TAB>STATUS<TAB>MESSAGE} (message with \n escaped).
 * Args: OUT, then key=value configuration parameters and class names.
 */
public final class SuiteRunner {
    private SuiteRunner() {
    }

    public static void main(String[] args) throws IOException {
        LauncherDiscoveryRequestBuilder request = LauncherDiscoveryRequestBuilder.request();
        for (int i = 1; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            if (eq > 0) {
                request.configurationParameter(args[i].substring(0, eq), args[i].substring(eq + 1));
            } else {
                request.selectors(selectClass(SuiteRunner.class.getPackageName() + "." + args[i]));
            }
        }
        LauncherDiscoveryRequest built = request.build();
        try (PrintWriter out = new PrintWriter(Files.newBufferedWriter(Path.of(args[0]), StandardCharsets.UTF_8))) {
            LauncherFactory.create().execute(built, new TestExecutionListener() {
                @Override
                public void executionFinished(TestIdentifier id, TestExecutionResult result) {
                    String name = id.getSource().map(Object::toString).isPresent() ? name(id) : id.getDisplayName();
                    String message = result.getThrowable().map(t -> String.valueOf(t.getMessage())).orElse("");
                    out.println(name + "\t" + result.getStatus() + "\t" + message.replace("\\", "\\\\").replace("\n", "\\n"));
                }

                @Override
                public void executionSkipped(TestIdentifier id, String reason) {
                    out.println(name(id) + "\tSKIPPED\t" + reason);
                }
            });
        }
    }

    /** "LeakyCases" for a class, "LeakyCases.leavesACommunicator" for a method. */
    private static String name(TestIdentifier id) {
        String uid = id.getUniqueId();
        String cls = uid.replaceAll(".*\\[class:[^\\]]*\\.([A-Za-z]+)\\].*", "$1");
        String method = uid.contains("[method:") ? uid.replaceAll(".*\\[method:([A-Za-z]+)\\(.*", "$1") : null;
        return uid.contains("[class:") ? cls + (method != null ? "." + method : "") : id.getDisplayName();
    }
}
