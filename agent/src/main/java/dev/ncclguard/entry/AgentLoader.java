package dev.ncclguard.entry;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.lang.instrument.Instrumentation;
import java.lang.module.Configuration;
import java.lang.module.ModuleDescriptor;
import java.lang.module.ModuleFinder;
import java.lang.module.ModuleReader;
import java.lang.module.ModuleReference;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.ByteBuffer;
import java.security.CodeSource;
import java.util.Enumeration;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.jar.Attributes;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.jar.Manifest;
import java.util.stream.Stream;

/**
 * The jar's entry points (Premain-Class, Agent-Class and Main-Class), and the maker of the agent's
 * own module. Under {@code -javaagent} the JVM puts the agent jar on the application's class path,
 * so every class file in it is the application's to load. So the jar holds as class files only
 * this class and the hooks the agent defines in the boot loader ({@code dev.ncclguard.bootstrap});
 * the rest lies under {@link #PREFIX} as {@code .classdata}, which no other loader takes for a
 * class, and is defined in a named module of its own ({@link #MODULE}), in a layer over the boot
 * layer whose loader is the JDK's own. The module exports nothing but its MXBean interface and its
 * one door ({@code start.Entry}, to this class alone) and opens nothing: the JDK internals the agent opens to itself, its
 * Instrumentation and its loader stay out of the application's reach, reflection included.
 *
 * <p>This class sits in the application's unnamed module, where reflection reaches everything; so
 * it holds no capability, and what the module's loader reads comes from a {@code static final}
 * JarFile, a field reflection cannot set ({@link Jar}). One module per JVM: premain, a later attach
 * and the command line share it. The entry points hand over at once to the module's one door
 * ({@code dev.ncclguard.start.Entry}), exported to this class alone: to the agent proper, or to the
 * command line.
 */
public final class AgentLoader {
    /** Where the agent's classes and resources lie in its jar. */
    public static final String PREFIX = "inst/";
    /** What a class file is called there. */
    public static final String CLASS_DATA = ".classdata";
    /** The agent's module. */
    public static final String MODULE = "dev.ncclguard";
    /**
     * The one package exported to all: the MXBean interface alone. java.management calls it through
     * a trampoline class in an unnamed module of its own (sun.reflect.misc.MethodUtil), so a
     * qualified export to java.management is not enough.
     */
    private static final String MXBEAN_PACKAGE = "dev.ncclguard.live.mxbean";
    /** The JDK modules the agent links to (jdeps); optional, as a jlinked runtime may lack one. */
    private static final String[] REQUIRES = {"java.instrument", "java.management", "jdk.attach", "jdk.jfr"};
    /** The module's one door, exported to this class alone: it takes the caller's Instrumentation. */
    private static final String ENTRY_PACKAGE = "dev.ncclguard.start";
    private static final String ENTRY = ENTRY_PACKAGE + ".Entry";

    private AgentLoader() {
    }

    /** The agent module's loader; the module is made at the first call. */
    static ClassLoader of() throws IOException {
        try {
            return Layer.LOADER;
        } catch (ExceptionInInitializerError e) {
            throw new IOException("cannot make the agent's module: " + e.getCause(), e.getCause());
        } catch (NoClassDefFoundError e) {
            throw new IOException("cannot make the agent's module (see the first error)", e);
        }
    }

    // --- the entry points ---

    public static void premain(String args, Instrumentation inst) {
        start("premain", args, inst);
    }

    public static void agentmain(String args, Instrumentation inst) {
        start("agentmain", args, inst);
    }

    /** {@code java -jar ncclguard-agent.jar COMMAND}: the commands run in the agent's module, as the agent does. */
    public static void main(String[] args) throws Throwable {
        ClassLoader loader = of();
        Thread.currentThread().setContextClassLoader(loader);
        try {
            loader.loadClass(ENTRY).getMethod("main", String[].class).invoke(null, (Object) args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }

    /**
     * One command of the command line, in the agent's module, for a build tool that runs it in its
     * own JVM (ncclguard-maven-plugin's check and report): the exit status, never System.exit.
     */
    public static int command(String[] args, java.io.PrintStream out, java.io.PrintStream err) throws Throwable {
        try {
            return (Integer) of().loadClass(ENTRY).getMethod("run", String[].class, java.io.PrintStream.class,
                    java.io.PrintStream.class).invoke(null, args, out, err);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }

    /** What agentmain throws (a bad option from another tool) is thrown here as it is. */
    private static void start(String method, String args, Instrumentation inst) {
        Method start;
        try {
            start = of().loadClass(ENTRY).getMethod(method, String.class, Instrumentation.class);
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

    // --- the module ---

    /** The jar, read as long as the JVM runs; static final, so that no reflection can point it elsewhere. */
    private static final class Jar {
        static final JarFile FILE;
        static final URI LOCATION;

        static {
            try {
                File file = jarOf(AgentLoader.class);
                FILE = new JarFile(file, false);
                LOCATION = file.toURI();
            } catch (IOException e) {
                throw new IllegalStateException(e.getMessage(), e);
            }
        }
    }

    /** The agent's module and its loader, made once, at the first use (premain, attach or a command). */
    private static final class Layer {
        static final ClassLoader LOADER;

        static {
            try {
                ModuleDescriptor descriptor = descriptor();
                Configuration cf = ModuleLayer.boot().configuration().resolve(new Finder(new Reference(descriptor)),
                        ModuleFinder.of(), Set.of(MODULE));
                ModuleLayer.Controller layer = ModuleLayer.defineModulesWithOneLoader(cf,
                        List.of(ModuleLayer.boot()), ClassLoader.getPlatformClassLoader());
                Module module = layer.layer().findModule(MODULE).orElseThrow();
                layer.addExports(module, ENTRY_PACKAGE, AgentLoader.class.getModule());
                LOADER = module.getClassLoader();
            } catch (IOException e) {
                throw new IllegalStateException(e.toString(), e);
            }
        }
    }

    /**
     * Every package under {@link #PREFIX} that holds a class; the version is the jar's, which the
     * report reads as the agent's.
     */
    private static ModuleDescriptor descriptor() throws IOException {
        Set<String> packages = new HashSet<>();
        for (Enumeration<JarEntry> e = Jar.FILE.entries(); e.hasMoreElements(); ) {
            String name = e.nextElement().getName();
            int slash = name.lastIndexOf('/');
            if (name.startsWith(PREFIX) && name.endsWith(CLASS_DATA) && slash > PREFIX.length()) {
                packages.add(name.substring(PREFIX.length(), slash).replace('/', '.'));
            }
        }
        ModuleDescriptor.Builder module = ModuleDescriptor.newModule(MODULE).packages(packages);
        for (String required : REQUIRES) {
            module.requires(Set.of(ModuleDescriptor.Requires.Modifier.STATIC), required);
        }
        if (packages.contains(MXBEAN_PACKAGE)) {
            module.exports(MXBEAN_PACKAGE);
        }
        Manifest manifest = Jar.FILE.getManifest();
        String version = manifest == null ? null
                : manifest.getMainAttributes().getValue(Attributes.Name.IMPLEMENTATION_VERSION);
        if (version != null) {
            try {
                module.version(version);
            } catch (IllegalArgumentException e) {
                // not a module version: the report then says none
            }
        }
        return module.build();
    }

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

    private static final class Finder implements ModuleFinder {
        private final ModuleReference module;

        Finder(ModuleReference module) {
            this.module = module;
        }

        @Override
        public Optional<ModuleReference> find(String name) {
            return MODULE.equals(name) ? Optional.of(module) : Optional.empty();
        }

        @Override
        public Set<ModuleReference> findAll() {
            return Set.of(module);
        }
    }

    /** The module's content: the jar's entries under {@link #PREFIX}, class files as {@code .classdata}. */
    private static final class Reference extends ModuleReference {
        Reference(ModuleDescriptor descriptor) {
            super(descriptor, Jar.LOCATION);
        }

        @Override
        public ModuleReader open() {
            return new Reader();
        }
    }

    /** Holds nothing: everything it reads comes from {@link Jar}'s final fields. */
    private static final class Reader implements ModuleReader {
        private static String entryName(String name) {
            return PREFIX + (name.endsWith(".class")
                    ? name.substring(0, name.length() - ".class".length()) + CLASS_DATA : name);
        }

        @Override
        public Optional<URI> find(String name) {
            String entry = entryName(name);
            if (Jar.FILE.getJarEntry(entry) == null) {
                return Optional.empty();
            }
            return Optional.of(URI.create("jar:" + Jar.LOCATION + "!/" + entry));
        }

        @Override
        public Optional<InputStream> open(String name) throws IOException {
            JarEntry entry = Jar.FILE.getJarEntry(entryName(name));
            return entry == null ? Optional.empty() : Optional.of(Jar.FILE.getInputStream(entry));
        }

        @Override
        public Optional<ByteBuffer> read(String name) throws IOException {
            JarEntry entry = Jar.FILE.getJarEntry(entryName(name));
            if (entry == null) {
                return Optional.empty();
            }
            try (InputStream in = Jar.FILE.getInputStream(entry)) {
                return Optional.of(ByteBuffer.wrap(in.readAllBytes()));
            }
        }

        @Override
        public Stream<String> list() {
            return Jar.FILE.stream().map(JarEntry::getName).filter(n -> n.startsWith(PREFIX))
                    .map(n -> n.substring(PREFIX.length()));
        }

        @Override
        public void close() {
            // the jar stays open as long as the JVM runs
        }
    }
}
