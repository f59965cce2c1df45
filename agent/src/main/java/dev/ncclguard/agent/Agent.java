package dev.ncclguard.agent;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.instrument.Instrumentation;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Enumeration;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.jar.JarOutputStream;

/**
 * The agent's entry points: -javaagent (premain) and attach (agentmain). This class only puts the
 * bootstrap package on the bootstrap class path, then hands over to {@link Installer} by name: it
 * must not link any class of {@code dev.ncclguard.bootstrap} itself, or the system class loader
 * would load a second copy of them before the bootstrap one exists.
 */
public final class Agent {
    static final String BOOTSTRAP_PACKAGE = "dev/ncclguard/bootstrap/";

    private Agent() {
    }

    public static void premain(String args, Instrumentation inst) {
        start(args, inst, true);
    }

    public static void agentmain(String args, Instrumentation inst) {
        start(args, inst, false);
    }

    private static void start(String args, Instrumentation inst, boolean premain) {
        try {
            appendBootstrap(inst);
            Class.forName("dev.ncclguard.agent.Installer")
                    .getMethod("install", String.class, Instrumentation.class, boolean.class)
                    .invoke(null, args, inst, premain);
        } catch (java.lang.reflect.InvocationTargetException e) {
            Throwable cause = e.getCause();
            if (cause instanceof RuntimeException) {
                throw (RuntimeException) cause;
            }
            System.err.println("ncclguard: not installed: " + cause);
        } catch (Throwable t) {
            System.err.println("ncclguard: not installed: " + t);
        }
    }

    /** Copies the bootstrap package into a small jar and appends it to the bootstrap class path. */
    private static void appendBootstrap(Instrumentation inst) throws IOException {
        if (isOnBootstrap()) {
            return; // an earlier attach already put it there
        }
        Path agentJar = Path.of(java.net.URI.create(
                Agent.class.getProtectionDomain().getCodeSource().getLocation().toString()));
        Path bootstrapJar = Files.createTempFile("ncclguard-bootstrap-", ".jar");
        bootstrapJar.toFile().deleteOnExit();
        try (JarFile source = new JarFile(agentJar.toFile());
             OutputStream out = Files.newOutputStream(bootstrapJar);
             JarOutputStream jar = new JarOutputStream(out)) {
            Enumeration<JarEntry> entries = source.entries();
            while (entries.hasMoreElements()) {
                JarEntry entry = entries.nextElement();
                if (entry.getName().startsWith(BOOTSTRAP_PACKAGE) && entry.getName().endsWith(".class")) {
                    jar.putNextEntry(new JarEntry(entry.getName()));
                    try (InputStream in = source.getInputStream(entry)) {
                        in.transferTo(jar);
                    }
                    jar.closeEntry();
                }
            }
        }
        inst.appendToBootstrapClassLoaderSearch(new JarFile(bootstrapJar.toFile()));
    }

    private static boolean isOnBootstrap() {
        try {
            return Class.forName("dev.ncclguard.bootstrap.Hooks", false, null) != null;
        } catch (ClassNotFoundException e) {
            return false;
        }
    }
}
