package dev.ncclguard.maven;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.net.MalformedURLException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Runs the agent jar's own command line (check, merge) in Maven's JVM, in the agent's class
 * loader, as {@code java -jar ncclguard-agent.jar COMMAND} would: one verdict, the CLI's, never a
 * second implementation of it here. The jar's loader is opened once per jar and build JVM.
 */
final class AgentCommands {
    private static final String ENTRY = "dev.ncclguard.entry.AgentLoader";
    private static final Map<File, Method> ENTRIES = new ConcurrentHashMap<>();

    private AgentCommands() {
    }

    /** What a command printed and its exit status (0 ok, 1 the verdict failed, 2 usage or input). */
    record Result(int status, String out, String err) {
    }

    static Result run(File agentJar, String... args) throws ReflectiveOperationException {
        Method command = ENTRIES.computeIfAbsent(agentJar.getAbsoluteFile(), AgentCommands::entry);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int status;
        try (PrintStream o = new PrintStream(out, true, StandardCharsets.UTF_8);
                PrintStream e = new PrintStream(err, true, StandardCharsets.UTF_8)) {
            try {
                status = (Integer) command.invoke(null, args, o, e);
            } catch (InvocationTargetException ex) {
                Throwable cause = ex.getCause();
                throw new ReflectiveOperationException("the agent's command line failed: " + cause, cause);
            }
        }
        return new Result(status, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    private static Method entry(File jar) {
        try {
            // the platform loader as parent: the agent sees the JDK, none of Maven's classes
            URLClassLoader loader = new URLClassLoader("ncclguard-plugin", new URL[] {jar.toURI().toURL()},
                    ClassLoader.getPlatformClassLoader());
            return loader.loadClass(ENTRY).getMethod("command", String[].class, PrintStream.class, PrintStream.class);
        } catch (MalformedURLException | ReflectiveOperationException e) {
            throw new IllegalStateException("cannot load the ncclguard agent's command line from " + jar + ": " + e, e);
        }
    }
}
