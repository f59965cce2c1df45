package dev.ncclguard.entry;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.lang.instrument.Instrumentation;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.net.URISyntaxException;
import java.net.URL;
import java.security.CodeSource;
import java.security.ProtectionDomain;
import java.security.cert.Certificate;
import java.util.jar.Attributes;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.jar.Manifest;

/**
 * The jar's entry points (Premain-Class, Agent-Class and Main-Class) and the class loader of the
 * agent's internals, as the OpenTelemetry agent has one. Under {@code -javaagent} the JVM puts the
 * agent jar on the application's class path, so every class file in it is the application's to
 * load, and the JDK packages opened to the agent are opened to the application too. So the jar
 * holds as class files only this class and the hooks the agent defines in the boot loader
 * ({@code dev.ncclguard.bootstrap}); the rest lies under {@link #PREFIX} as {@code .classdata},
 * which no other loader takes for a class, and is defined here, in a loader and unnamed module of
 * its own. Its parent is the platform class loader: the agent sees the JDK and the boot hooks, and
 * the application's classes (JNA, SLF4J) only by name, through their own loaders.
 *
 * <p>One per JVM: premain, a later attach and the command line share it ({@link #of}). The entry
 * points hand over at once to the agent proper ({@code dev.ncclguard.agent.Agent}) or to the
 * command line ({@code dev.ncclguard.cli.Cli}) in it; they are this class's own, so that the JVM
 * loads one class of the agent from the class path at start.
 */
public final class AgentLoader extends ClassLoader {
    /** Where the agent's classes and resources lie in its jar. */
    public static final String PREFIX = "inst/";
    /** What a class file is called there. */
    public static final String CLASS_DATA = ".classdata";
    private static final String AGENT = "dev.ncclguard.agent.Agent";
    private static final String CLI = "dev.ncclguard.cli.Cli";

    private static volatile AgentLoader instance;

    static {
        // premain's preloading thread and the main thread load classes side by side
        registerAsParallelCapable();
    }

    private final JarFile jar;
    private final URL location;
    private final ProtectionDomain domain;
    private final Attributes manifest;

    private AgentLoader(File file) throws IOException {
        super("ncclguard", ClassLoader.getPlatformClassLoader());
        this.jar = new JarFile(file, false); // read as long as the JVM runs
        this.location = file.toURI().toURL();
        this.domain = new ProtectionDomain(new CodeSource(location, (Certificate[]) null), null, this, null);
        Manifest m = jar.getManifest();
        this.manifest = m == null ? new Attributes() : m.getMainAttributes();
    }

    /** The agent's loader over the jar that holds this class; made at the first call. */
    static AgentLoader of() throws IOException {
        AgentLoader loader = instance;
        if (loader == null) {
            synchronized (AgentLoader.class) {
                loader = instance;
                if (loader == null) {
                    loader = new AgentLoader(jarOf(AgentLoader.class));
                    instance = loader;
                }
            }
        }
        return loader;
    }

    // --- the entry points ---

    public static void premain(String args, Instrumentation inst) {
        start("premain", args, inst);
    }

    public static void agentmain(String args, Instrumentation inst) {
        start("agentmain", args, inst);
    }

    /** {@code java -jar ncclguard-agent.jar COMMAND}: the commands run in the agent's loader, as the agent does. */
    public static void main(String[] args) throws Throwable {
        ClassLoader loader = of();
        Thread.currentThread().setContextClassLoader(loader);
        try {
            loader.loadClass(CLI).getMethod("main", String[].class).invoke(null, (Object) args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }

    /**
     * One command of the command line, in the agent's loader, for a build tool that runs it in its
     * own JVM (ncclguard-maven-plugin's check and report): the exit status, never System.exit.
     */
    public static int command(String[] args, java.io.PrintStream out, java.io.PrintStream err) throws Throwable {
        try {
            return (Integer) of().loadClass(CLI).getMethod("run", String[].class, java.io.PrintStream.class,
                    java.io.PrintStream.class).invoke(null, args, out, err);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }

    /** What agentmain throws (a bad option from another tool) is thrown here as it is. */
    private static void start(String method, String args, Instrumentation inst) {
        Method start;
        try {
            start = of().loadClass(AGENT).getMethod(method, String.class, Instrumentation.class);
        } catch (Exception | LinkageError e) {
            System.err.println("ncclguard: not installed: " + e);
            return;
        }
        try {
            start.invoke(null, args, inst);
        } catch (InvocationTargetException e) {
            Throwable cause = e.getCause();
            if (cause instanceof RuntimeException r) {
                throw r;
            }
            if (cause instanceof Error r) {
                throw r;
            }
            System.err.println("ncclguard: not installed: " + cause);
        } catch (IllegalAccessException e) {
            System.err.println("ncclguard: not installed: " + e);
        }
    }

    // --- the loader ---

    private static File jarOf(Class<?> c) throws IOException {
        try {
            CodeSource source = c.getProtectionDomain().getCodeSource();
            File file = source == null ? null : new File(source.getLocation().toURI());
            if (file == null || !file.isFile()) {
                throw new IOException("not run from the agent jar (" + file + ")");
            }
            return file;
        } catch (URISyntaxException | RuntimeException e) {
            throw new IOException("cannot locate the agent jar: " + e, e);
        }
    }

    @Override
    protected Class<?> findClass(String name) throws ClassNotFoundException {
        JarEntry entry = jar.getJarEntry(PREFIX + name.replace('.', '/') + CLASS_DATA);
        if (entry == null) {
            throw new ClassNotFoundException(name);
        }
        byte[] bytes;
        try (InputStream in = jar.getInputStream(entry)) {
            bytes = in.readAllBytes();
        } catch (IOException e) {
            throw new ClassNotFoundException(name + ": " + e, e);
        }
        definePackageOf(name);
        return defineClass(name, bytes, 0, bytes.length, domain);
    }

    /** With the jar's Implementation-Title and -Version, which the report reads as the agent's version. */
    private void definePackageOf(String className) {
        int dot = className.lastIndexOf('.');
        if (dot < 0) {
            return;
        }
        String pkg = className.substring(0, dot);
        if (getDefinedPackage(pkg) != null) {
            return;
        }
        try {
            definePackage(pkg, null, null, null, manifest.getValue(Attributes.Name.IMPLEMENTATION_TITLE),
                    manifest.getValue(Attributes.Name.IMPLEMENTATION_VERSION), null, null);
        } catch (IllegalArgumentException e) {
            // another thread defined it first
        }
    }

    @Override
    protected URL findResource(String name) {
        String entryName = PREFIX + (name.endsWith(".class")
                ? name.substring(0, name.length() - ".class".length()) + CLASS_DATA : name);
        if (jar.getJarEntry(entryName) == null) {
            return null;
        }
        try {
            return new URL("jar:" + location + "!/" + entryName);
        } catch (IOException e) { // malformed: not caught by its own name, which premain would then load
            return null;
        }
    }
}
