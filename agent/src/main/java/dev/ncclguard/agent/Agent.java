package dev.ncclguard.agent;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.lang.instrument.Instrumentation;
import java.lang.module.ModuleDescriptor;
import java.net.URISyntaxException;
import java.util.Enumeration;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;

/**
 * The agent's start: premain (-javaagent) and agentmain (attach), called in the agent's own class
 * loader by {@code dev.ncclguard.entry.AgentLoader}, the jar's Premain-Class and Agent-Class. This
 * class only opens the JDK internals the agent uses to its module and defines the bootstrap
 * package in the bootstrap class loader, then hands over to {@link Installer}. It must not link any
 * class of {@code dev.ncclguard.bootstrap} itself: before the bootstrap copy exists, no loader
 * could find one; Installer is only linked at its first call, after that.
 */
public final class Agent {
    /** The packages defined in the boot loader: every class under it in the jar, so the list is the jar's. */
    private static final String BOOTSTRAP = "dev/ncclguard/bootstrap/";
    /** Their module in the boot loader. */
    static final String BOOT_MODULE = "dev.ncclguard.bootstrap";
    /** What woven code calls: exported to every module. */
    private static final String HOOKS = "dev.ncclguard.bootstrap";
    /** What the agent plugs into the hooks: exported to the agent's module alone. */
    private static final String STATE = "dev.ncclguard.bootstrap.state";
    private static final String MISC = "jdk.internal.misc";

    private Agent() {
    }

    public static void premain(String args, Instrumentation inst) {
        start(args, inst, true);
    }

    public static void agentmain(String args, Instrumentation inst) {
        // the attach and dump commands' requests, option checks and option updates are answered
        // before the JVM changes in any way; only a first attach goes on to install
        dev.ncclguard.control.AttachEntry.agentmain(args, inst, options -> start(options, inst, false));
    }

    private static void start(String args, Instrumentation inst, boolean premain) {
        try {
            openJdkInternals(inst);
            defineBootstrapClasses();
            if (premain) {
                Preload.start("ncclguard-preload", Preload.PREMAIN);
            }
        } catch (IOException | RuntimeException | LinkageError e) {
            System.err.println("ncclguard: not installed: " + e);
            return;
        } finally {
            JdkInternals.closeBootLoader(); // defined now or never: no later code of the agent can
        }
        try {
            Installer.install(args, inst, premain);
        } catch (RuntimeException e) {
            if (!premain) {
                throw e; // a bad option at attach must fail the attach
            }
            // thrown out of premain, anything aborts the JVM ("processing of -javaagent failed")
            System.err.println("ncclguard: not installed: " + e);
        } catch (Error e) {
            System.err.println("ncclguard: not installed: " + e);
        }
    }

    /**
     * Exports java.base's jdk.internal.access to the agent alone, for {@link JdkInternals}, and
     * jdk.internal.misc, for the tracker's Backtraces (creating stacks compared without
     * getStackTrace); then lets the agent's module read the application's unnamed modules, where
     * it finds JNA and SLF4J by name.
     */
    static void openJdkInternals(Instrumentation inst) {
        Module base = Object.class.getModule();
        Module agent = Agent.class.getModule();
        if (!base.isExported(JdkInternals.PACKAGE, agent) || !base.isExported(MISC, agent)) {
            inst.redefineModule(base, Set.of(), Map.of(JdkInternals.PACKAGE, Set.of(agent), MISC, Set.of(agent)),
                    Map.of(), Set.of(), Map.of());
        }
        if (agent.isNamed()) {
            JdkInternals.addReadsAllUnnamed(agent);
        }
    }

    /**
     * Defines the bootstrap packages' classes in the bootstrap class loader, in a named module of
     * their own ({@link #BOOT_MODULE}): the hooks' package exported to all (woven code anywhere calls
     * it), its state package to the agent alone, neither opened, so application code can neither
     * read what the agent plugged in nor define a class next to the hooks. They are injected
     * rather than appended to the bootstrap class path: appending disables class data sharing for
     * the application's classes and makes the JVM print a warning on every start. The bytes are
     * read from the agent's jar file directly: a class loader's getResourceAsStream goes through
     * URL connections, a dozen more classes to load in premain.
     */
    private static void defineBootstrapClasses() throws IOException {
        if (isOnBootstrap()) {
            return; // an earlier attach already put it there
        }
        Map<String, byte[]> classes = new LinkedHashMap<>();
        Set<String> packages = new HashSet<>();
        File file = agentJar();
        try (JarFile jar = new JarFile(file, false)) {
            for (Enumeration<JarEntry> e = jar.entries(); e.hasMoreElements(); ) {
                JarEntry entry = e.nextElement();
                String name = entry.getName();
                if (name.startsWith(BOOTSTRAP) && name.endsWith(".class")) {
                    String className = name.substring(0, name.length() - ".class".length()).replace('/', '.');
                    packages.add(className.substring(0, className.lastIndexOf('.')));
                    try (InputStream in = jar.getInputStream(entry)) {
                        classes.put(className, in.readAllBytes());
                    }
                }
            }
        }
        if (classes.isEmpty()) {
            throw new IOException("agent jar lacks " + BOOTSTRAP);
        }
        Module agent = Agent.class.getModule();
        Module hooks = JdkInternals.defineBootModule(ModuleDescriptor.newModule(BOOT_MODULE).packages(packages)
                .exports(HOOKS).build(), file.toURI());
        Module base = Object.class.getModule();
        JdkInternals.addReads(hooks, base);
        JdkInternals.addReads(base, hooks); // the JDK's woven methods call the hooks
        JdkInternals.addReads(agent, hooks);
        // a module in no layer gets no exports from its descriptor: the VM's are set here
        JdkInternals.addExports(hooks, HOOKS);
        JdkInternals.addExports(hooks, STATE, agent);
        // a class is defined after the types it extends: what fails for want of one is retried
        while (!classes.isEmpty()) {
            int before = classes.size();
            LinkageError last = null;
            for (Iterator<Map.Entry<String, byte[]>> i = classes.entrySet().iterator(); i.hasNext(); ) {
                Map.Entry<String, byte[]> c = i.next();
                try {
                    JdkInternals.defineInBootLoader(c.getKey(), c.getValue());
                    i.remove();
                } catch (NoClassDefFoundError e) {
                    last = e;
                }
            }
            if (classes.size() == before) {
                throw last;
            }
        }
        dev.ncclguard.weave.HookReads.hooksIn(hooks);
    }

    private static File agentJar() throws IOException {
        try {
            return new File(Agent.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        } catch (URISyntaxException | RuntimeException e) {
            throw new IOException("cannot locate the agent jar: " + e, e);
        }
    }

    private static boolean isOnBootstrap() {
        try {
            return Class.forName("dev.ncclguard.bootstrap.Hooks", false, null) != null;
        } catch (ClassNotFoundException e) {
            return false;
        }
    }
}
