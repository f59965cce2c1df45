package dev.ncclguard.cli;

import com.sun.tools.attach.AgentInitializationException;
import com.sun.tools.attach.AgentLoadException;
import com.sun.tools.attach.VirtualMachine;
import dev.ncclguard.agent.Installer;
import dev.ncclguard.control.AttachEntry;
import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.CodeSource;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ThreadLocalRandom;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A running JVM of the same user, reached through the Attach API: its properties, and requests to
 * the agent in it (loaded for the purpose from this very jar), answered through its agent properties.
 */
final class Target implements AutoCloseable {
    private static final Pattern DYNAMIC_LOADING = Pattern.compile("-XX:([+-])EnableDynamicAgentLoading\\b");

    final String pid;
    final VirtualMachine vm;
    final Properties system;

    private Target(String pid, VirtualMachine vm, Properties system) {
        this.pid = pid;
        this.vm = vm;
        this.system = system;
    }

    /** @throws CommandException for a pid that is not a number, or this very JVM */
    static Target attach(String pid) throws Exception {
        if (!pid.matches("[0-9]{1,10}")) {
            throw new CommandException("'" + pid + "' is not a process id");
        }
        if (Long.parseLong(pid) == ProcessHandle.current().pid()) {
            throw new CommandException("cannot attach to itself");
        }
        VirtualMachine vm = VirtualMachine.attach(pid);
        try {
            return new Target(pid, vm, vm.getSystemProperties());
        } catch (IOException | RuntimeException e) {
            vm.detach();
            throw e;
        }
    }

    /** The target's Java feature version: 17, 21, 25 (8 for 1.8). */
    int javaFeature() {
        String spec = system.getProperty("java.specification.version", "0");
        String major = spec.startsWith("1.") ? spec.substring(2) : spec;
        try {
            return Integer.parseInt(major.replaceAll("[^0-9].*", ""));
        } catch (NumberFormatException e) {
            return 0;
        }
    }

    String javaVersion() {
        return system.getProperty("java.version", "?");
    }

    /** Whether the agent runs there (started with -javaagent, or attached before). */
    boolean agentRunning() {
        return system.getProperty(Installer.INSTALLED) != null;
    }

    /** The target's ncclguard.* system properties, which its options read. */
    Map<String, String> optionProperties() {
        Map<String, String> out = new HashMap<>();
        for (String name : system.stringPropertyNames()) {
            if (name.startsWith("ncclguard.")) {
                out.put(name, system.getProperty(name));
            }
        }
        return out;
    }

    /** The one line for JDK 21+, which warns on its stderr of an agent loaded into it; null when it does not. */
    String dynamicLoadingNote() throws IOException {
        Properties agent = vm.getAgentProperties();
        String args = agent.getProperty("sun.jvm.args", "") + " " + agent.getProperty("sun.jvm.flags", "");
        if (!dynamicLoadingWarns(javaFeature(), args)) {
            return null;
        }
        return "ncclguard: pid " + pid + " runs Java " + javaVersion() + " without -XX:+EnableDynamicAgentLoading,"
                + " so it prints a warning about a dynamically loaded agent (harmless; that flag, or -javaagent"
                + " at start, avoids it)";
    }

    /** JDK 21 and later warn unless the flag was given at start; the last -XX:±EnableDynamicAgentLoading wins. */
    static boolean dynamicLoadingWarns(int javaFeature, String jvmArgs) {
        if (javaFeature < 21) {
            return false;
        }
        Matcher m = DYNAMIC_LOADING.matcher(jvmArgs);
        String last = null;
        while (m.find()) {
            last = m.group(1);
        }
        return !"+".equals(last);
    }

    /**
     * Loads this jar as an agent with a request and returns its answer: the text after the status
     * line; a FAILED answer throws with its line.
     */
    String request(String verb, String options) throws Exception {
        String nonce = Long.toString(System.currentTimeMillis(), 36) + "-"
                + Long.toHexString(ThreadLocalRandom.current().nextLong());
        String jar = agentJar().toString();
        try {
            vm.loadAgent(jar, AttachEntry.REQUEST + ";" + verb + ";" + nonce + ";" + options);
        } catch (AgentLoadException e) {
            throw new CommandException("pid " + pid + " refused to load the agent (" + e.getMessage()
                    + "); a JVM started with -XX:-EnableDynamicAgentLoading takes none");
        } catch (AgentInitializationException e) {
            throw new CommandException("the agent failed in pid " + pid + "; the reason is on its stderr");
        }
        String reply = vm.getAgentProperties().getProperty("ncclguard.reply." + nonce);
        if (reply == null) {
            throw new CommandException("pid " + pid + " loaded the agent but did not answer; see its stderr");
        }
        int eol = reply.indexOf('\n');
        String status = eol < 0 ? reply : reply.substring(0, eol);
        String text = eol < 0 ? "" : reply.substring(eol + 1);
        if (!status.equals(AttachEntry.OK)) {
            throw new CommandException.Line(text);
        }
        return text;
    }

    /** The jar this command runs from: the agent is that same jar. */
    static Path agentJar() throws CommandException {
        CodeSource source = Target.class.getProtectionDomain().getCodeSource();
        try {
            Path path = source == null ? null : Path.of(source.getLocation().toURI());
            if (path != null && Files.isRegularFile(path) && path.toString().endsWith(".jar")) {
                return path.toAbsolutePath();
            }
        } catch (URISyntaxException | IllegalArgumentException e) {
            // reported below
        }
        throw new CommandException("run it from the agent jar: java -jar ncclguard-agent.jar ...");
    }

    @Override
    public void close() {
        try {
            vm.detach();
        } catch (IOException e) {
            // the target may have exited meanwhile; nothing to release on this side
        }
    }
}
