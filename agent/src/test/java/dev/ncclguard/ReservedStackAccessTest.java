package dev.ncclguard;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ncclguard.track.Tracker;
import java.io.IOException;
import java.lang.module.ModuleDescriptor;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.FileSystem;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;
import net.bytebuddy.jar.asm.AnnotationVisitor;
import net.bytebuddy.jar.asm.ClassReader;
import net.bytebuddy.jar.asm.ClassVisitor;
import net.bytebuddy.jar.asm.Handle;
import net.bytebuddy.jar.asm.MethodVisitor;
import net.bytebuddy.jar.asm.Opcodes;
import org.junit.jupiter.api.Test;

/**
 * No JDK method annotated {@code @ReservedStackAccess} (ReentrantLock's and AQS's lock paths,
 * StampedLock's) is reachable from code that runs on the application's threads: inlined into an
 * agent method, such a method makes the JVM print "Potentially dangerous stack overflow in
 * ReservedStackAccess annotated method ..." each time a StackOverflowError passes through it (the
 * StampedLock the tracker once had did, 30 lines per overflow, naming Tracker.exit).
 *
 * <p>Scope, read from the compiled classes with ASM: every method of the packages whose code runs
 * inside the application's calls ({@link #HOT_PACKAGES}: the hooks woven code calls, the bridges
 * they hand to, the tracker, the weaver's runtime parts and transformers, which run at class load
 * on any thread), every agent method those reach, and the JDK methods reached from there, read
 * from jrt:/, followed {@link #JDK_DEPTH} calls deep (ReentrantLock.lock is 2 deep: Sync.lock
 * carries the annotation). A call is followed to the method it names (resolved up the class's
 * supertypes) and, on an agent type, to every agent override; a JDK method's overrides are not
 * followed: a lock used through the {@code Lock} interface is not seen.
 */
class ReservedStackAccessTest {
    private static final String ANNOTATION = "Ljdk/internal/vm/annotation/ReservedStackAccess;";
    static final List<String> HOT_PACKAGES = List.of("dev/ncclguard/bootstrap/", "dev/ncclguard/bridge/",
            "dev/ncclguard/track/", "dev/ncclguard/weave/");
    /**
     * Classes of those packages that never run inside an application's call, left out with their
     * reason: {@code bootstrap.Live} answers the JUnit extension between tests (it builds a live
     * report, whose host name InetAddress resolves under a ReentrantLock).
     */
    static final Set<String> NOT_IN_CALLS = Set.of("dev/ncclguard/bootstrap/Live");
    /**
     * Class initializers are left out: each runs once, at premain or a class's first use, where a
     * StackOverflowError fails the class's initialization whatever it calls; and no call names one.
     * (AtomicIntegerFieldUpdater.newUpdater in Tracked's reaches AccessController's, on JDK 17.)
     */
    private static final String CLASS_INIT = "<clinit>(";
    /** How many calls deep into the JDK a path is followed: the annotated lock methods sit at 1 to 3. */
    static final int JDK_DEPTH = 4;

    private final Map<String, ClassInfo> agent = new HashMap<>();
    private final Map<String, ClassInfo> jdk = new HashMap<>();
    private final Map<String, String> moduleOfPackage = new HashMap<>();
    private FileSystem jrt;

    /** What the scan needs of a class: its supertypes, and per method its annotation and calls. */
    private static final class ClassInfo {
        String name;
        String superName;
        List<String> interfaces = List.of();
        final Map<String, MethodInfo> methods = new HashMap<>();
    }

    private static final class MethodInfo {
        /** The class that declares it (a call may name a subclass). */
        String owner;
        boolean annotated;
        /** owner, name, desc of each method it calls (a lambda's or method reference's target too). */
        final List<String[]> calls = new ArrayList<>();
    }

    /** A method reached, and how: for the failure message. */
    private record Reached(String owner, String name, String desc, int jdkDepth, Reached from) {
        String path() {
            List<String> steps = new ArrayList<>();
            for (Reached r = this; r != null; r = r.from) {
                steps.add(0, r.owner.replace('/', '.') + "." + r.name);
            }
            return String.join(" -> ", steps);
        }
    }

    @Test
    void noCodeOnTheApplicationsThreadsReachesAReservedStackAccessMethod() throws Exception {
        List<String> found = reservedStackAccessPaths();
        assertTrue(found.isEmpty(), "@ReservedStackAccess reached from the agent's hot paths (the JVM warns at"
                + " stack overflows; use a lock without it, synchronized, or a lock-free structure):\n"
                + String.join("\n", found));
    }

    @Test
    void theScanSeesTheJdksAnnotatedLockMethods() throws Exception {
        // what the test above relies on: the annotation is where it looks for it, 2 calls deep
        jrt = FileSystems.getFileSystem(URI.create("jrt:/"));
        Reached lock = new Reached("java/util/concurrent/locks/ReentrantLock", "lock", "()V", 0, null);
        List<String> found = new ArrayList<>();
        scan(new ArrayDeque<>(List.of(lock)), found);
        assertFalse(found.isEmpty(), "ReentrantLock.lock reaches Sync.lock, annotated @ReservedStackAccess");
    }

    private List<String> reservedStackAccessPaths() throws IOException, URISyntaxException {
        jrt = FileSystems.getFileSystem(URI.create("jrt:/"));
        Path classes = Path.of(Tracker.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        try (Stream<Path> files = Files.walk(classes)) {
            for (Path file : files.filter(f -> f.toString().endsWith(".class")).toList()) {
                ClassInfo info = read(Files.readAllBytes(file));
                agent.put(info.name, info);
            }
        }
        assertTrue(agent.containsKey("dev/ncclguard/bootstrap/Hooks"), "the agent's classes are at " + classes);
        ArrayDeque<Reached> work = new ArrayDeque<>();
        for (ClassInfo c : agent.values()) {
            if (HOT_PACKAGES.stream().anyMatch(c.name::startsWith) && !NOT_IN_CALLS.contains(c.name)) {
                for (String nameDesc : c.methods.keySet()) {
                    if (nameDesc.startsWith(CLASS_INIT)) {
                        continue;
                    }
                    int paren = nameDesc.indexOf('(');
                    work.add(new Reached(c.name, nameDesc.substring(0, paren), nameDesc.substring(paren), 0, null));
                }
            }
        }
        List<String> found = new ArrayList<>();
        scan(work, found);
        return found;
    }

    private void scan(ArrayDeque<Reached> work, List<String> found) throws IOException {
        Set<String> seen = new TreeSet<>();
        while (!work.isEmpty()) {
            Reached r = work.poll();
            if (!seen.add(r.owner + "." + r.name + r.desc)) {
                continue;
            }
            MethodInfo m = resolve(r.owner, r.name, r.desc);
            if (m == null) {
                continue; // a signature-polymorphic call, a class of the application's
            }
            boolean inJdk = !agent.containsKey(m.owner);
            if (inJdk && m.annotated) {
                found.add(r.path());
                continue;
            }
            int depth = inJdk ? r.jdkDepth + 1 : 0;
            if (depth > JDK_DEPTH) {
                continue;
            }
            for (String[] call : m.calls) {
                work.add(new Reached(call[0], call[1], call[2], depth, r));
                // a call on an agent type may run any agent override of it (Log's sinks, the bridges' sinks)
                for (String sub : agentSubtypes(call[0])) {
                    if (agent.get(sub).methods.containsKey(call[1] + call[2])) {
                        work.add(new Reached(sub, call[1], call[2], depth, r));
                    }
                }
            }
        }
    }

    private final Map<String, List<String>> subtypes = new HashMap<>();

    /** The agent's classes below {@code type} (none for a JDK type: JDK overrides are not followed). */
    private List<String> agentSubtypes(String type) {
        if (!agent.containsKey(type)) {
            return List.of();
        }
        return subtypes.computeIfAbsent(type, t -> {
            List<String> below = new ArrayList<>();
            for (ClassInfo c : agent.values()) {
                if (!c.name.equals(t) && isSubtype(c.name, t)) {
                    below.add(c.name);
                }
            }
            return below;
        });
    }

    private boolean isSubtype(String name, String of) {
        ClassInfo c = agent.get(name);
        if (c == null) {
            return false;
        }
        if (of.equals(c.superName) || c.interfaces.contains(of)) {
            return true;
        }
        if (c.superName != null && isSubtype(c.superName, of)) {
            return true;
        }
        for (String i : c.interfaces) {
            if (isSubtype(i, of)) {
                return true;
            }
        }
        return false;
    }

    /** The method a call of {@code owner.name desc} runs as declared: in the class or up its supertypes. */
    private MethodInfo resolve(String owner, String name, String desc) throws IOException {
        ArrayDeque<String> types = new ArrayDeque<>(List.of(owner));
        Set<String> tried = new TreeSet<>();
        while (!types.isEmpty()) {
            String type = types.poll();
            if (!tried.add(type)) {
                continue;
            }
            ClassInfo c = classInfo(type);
            if (c == null) {
                continue;
            }
            MethodInfo m = c.methods.get(name + desc);
            if (m != null) {
                return m;
            }
            if (c.superName != null) {
                types.add(c.superName);
            }
            types.addAll(c.interfaces);
        }
        return null;
    }

    private ClassInfo classInfo(String type) throws IOException {
        ClassInfo c = agent.get(type);
        if (c != null || jdk.containsKey(type)) {
            return c != null ? c : jdk.get(type);
        }
        Path file = jdkClassFile(type);
        c = file == null ? null : read(Files.readAllBytes(file));
        jdk.put(type, c);
        return c;
    }

    /** The class's file in jrt:/modules/MODULE/..., or null for a type of no module of the JDK. */
    private Path jdkClassFile(String type) {
        if (moduleOfPackage.isEmpty()) {
            for (Module module : ModuleLayer.boot().modules()) {
                ModuleDescriptor d = module.getDescriptor();
                for (String p : d.packages()) {
                    moduleOfPackage.put(p.replace('.', '/'), d.name());
                }
            }
        }
        int slash = type.lastIndexOf('/');
        String module = slash < 0 ? null : moduleOfPackage.get(type.substring(0, slash));
        if (module == null) {
            return null;
        }
        Path file = jrt.getPath("modules", module, type + ".class");
        return Files.exists(file) ? file : null;
    }

    private static ClassInfo read(byte[] bytes) {
        ClassInfo info = new ClassInfo();
        new ClassReader(bytes).accept(new ClassVisitor(Opcodes.ASM9) {
            @Override
            public void visit(int version, int access, String name, String signature, String superName,
                              String[] interfaces) {
                info.name = name;
                info.superName = superName;
                info.interfaces = interfaces == null ? List.of() : List.of(interfaces);
            }

            @Override
            public MethodVisitor visitMethod(int access, String name, String desc, String signature, String[] exceptions) {
                MethodInfo m = new MethodInfo();
                m.owner = info.name;
                info.methods.put(name + desc, m);
                return new MethodVisitor(Opcodes.ASM9) {
                    @Override
                    public AnnotationVisitor visitAnnotation(String annotation, boolean visible) {
                        m.annotated |= ANNOTATION.equals(annotation);
                        return null;
                    }

                    @Override
                    public void visitMethodInsn(int opcode, String owner, String callee, String calleeDesc, boolean itf) {
                        if (!owner.startsWith("[")) {
                            m.calls.add(new String[] {owner, callee, calleeDesc});
                        }
                    }

                    @Override
                    public void visitInvokeDynamicInsn(String indyName, String indyDesc, Handle bsm, Object... args) {
                        for (Object arg : args) {
                            if (arg instanceof Handle h) {
                                m.calls.add(new String[] {h.getOwner(), h.getName(), h.getDesc()});
                            }
                        }
                    }
                };
            }
        }, ClassReader.SKIP_DEBUG | ClassReader.SKIP_FRAMES);
        return info;
    }
}
