package dev.ncclguard;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ncclguard.catalog.Catalog;
import dev.ncclguard.testkit.SchemaCheck;
import dev.ncclguard.track.Tracker;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.URISyntaxException;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The agent's packages import one way: each uses only packages of the levels below its own, so no
 * two packages use each other. Read from the compiled classes' constant pools (every class, method
 * and field type they name; string literals are not uses), so nothing escapes that javac linked.
 * The catalog is a module of its own (catalog/, shaded into the agent jar): its classes are read
 * with the agent's, and it stays a bottom layer.
 */
class PackageLayersTest {
    /**
     * The allowed order, from the bottom up (names under dev.ncclguard). A package may use packages
     * of lower levels only; the packages of one level do not use each other. A new package goes in
     * here, at the level of what it may use.
     */
    static final List<List<String>> LEVELS = List.of(
            List.of("bootstrap.state", "live.mxbean"),
            List.of("bootstrap"),
            List.of("log"),
            List.of("catalog"),
            List.of("config"),
            List.of("json"),
            List.of("track"),
            List.of("weave"),
            List.of("bridge"),
            List.of("bridge.jna", "bridge.natives", "bridge.ffm", "bridge.interposer"),
            List.of("bridge.attach", "bridge.profiler"),
            List.of("cleanup"),
            List.of("report"),
            List.of("live"),
            List.of("control"),
            List.of("agent"),
            List.of("cli"),
            List.of("start"),
            List.of("entry"));

    private static final String ROOT = "dev/ncclguard/";
    /** A type named in a constant pool entry: dev/ncclguard/, the package, a class name (capitalized). */
    private static final Pattern TYPE = Pattern.compile("dev/ncclguard/([a-z0-9_]+(?:/[a-z0-9_]+)*)/[A-Z]");
    /** A whole class name under dev/ncclguard/, nested classes included (Outer$Inner). */
    private static final Pattern TEST_TYPE = Pattern.compile("dev/ncclguard/[A-Za-z0-9_/$]+");

    @Test
    void noPackageUsesOneAboveItOrBesideIt() throws IOException {
        Map<String, Map<String, Set<String>>> uses = uses(agentClasses());
        List<String> faults = faults(uses, LEVELS);
        assertTrue(faults.isEmpty(), String.join("\n", faults));
    }

    @Test
    void noTwoPackagesUseEachOther() throws IOException {
        Map<String, Map<String, Set<String>>> uses = uses(agentClasses());
        List<List<String>> cycles = cycles(uses);
        assertTrue(cycles.isEmpty(), "packages in a cycle: " + cycles + "\n" + String.join("\n", faults(uses, LEVELS)));
    }

    @Test
    void everyPackageOfTheAgentHasALevel() throws IOException {
        Set<String> compiled = uses(agentClasses()).keySet();
        Set<String> listed = new TreeSet<>();
        LEVELS.forEach(listed::addAll);
        assertEquals(listed, new TreeSet<>(compiled), "LEVELS must list the agent's packages, and only those");
    }

    /**
     * The test kit (dev.ncclguard.testkit, test code) is the bottom of the tests: every test may use
     * it, and it uses no test class outside itself, so no helper of one test hides in the kit.
     */
    @Test
    void theTestKitUsesNoTestClassOutsideItself() throws IOException {
        Path testClasses = codeSource(SchemaCheck.class);
        Set<String> others = new TreeSet<>();
        List<Path> kit = new ArrayList<>();
        try (Stream<Path> walk = Files.walk(testClasses.resolve(ROOT))) {
            for (Path f : walk.filter(f -> f.toString().endsWith(".class")).toList()) {
                String name = testClasses.relativize(f).toString().replace('\\', '/');
                if (name.startsWith(ROOT + "testkit/")) {
                    kit.add(f);
                } else {
                    others.add(name.substring(0, name.length() - ".class".length()));
                }
            }
        }
        assertTrue(kit.size() > 5, "the kit's classes in " + testClasses + ": " + kit);
        List<String> faults = new ArrayList<>();
        for (Path f : kit) {
            try (InputStream in = Files.newInputStream(f)) {
                for (String type : typesNamed(in)) {
                    Matcher m = TEST_TYPE.matcher(type);
                    while (m.find()) {
                        if (others.contains(m.group())) {
                            faults.add(f.getFileName() + " -> " + m.group());
                        }
                    }
                }
            }
        }
        assertEquals(List.of(), faults);
    }

    /** The check itself, on made-up packages: a test that cannot fail is no test. */
    @Test
    void theCheckFindsAnImportUpwardsOneBesideAndACycle() {
        Map<String, Map<String, Set<String>>> uses = new TreeMap<>();
        uses.put("low", Map.of("high", Set.of("low.A -> high.B")));
        uses.put("high", Map.of("low", Set.of("high.B -> low.A")));
        uses.put("left", Map.of("right", Set.of("left.C -> right.D")));
        uses.put("right", Map.of());
        List<List<String>> levels = List.of(List.of("low"), List.of("left", "right"), List.of("high"));

        List<String> faults = faults(uses, levels);
        assertEquals(2, faults.size(), String.join("\n", faults));
        assertTrue(faults.get(0).startsWith("left uses right, of its own level"), faults.get(0));
        assertTrue(faults.get(1).startsWith("low uses high, a level above it"), faults.get(1));
        assertEquals(List.of(List.of("high", "low")), cycles(uses));
    }

    // --- the check ---

    /** What breaks the order: a use of a package above, or beside (same level), one line each. */
    static List<String> faults(Map<String, Map<String, Set<String>>> uses, List<List<String>> levels) {
        Map<String, Integer> level = new HashMap<>();
        for (int i = 0; i < levels.size(); i++) {
            for (String p : levels.get(i)) {
                level.put(p, i);
            }
        }
        List<String> faults = new ArrayList<>();
        for (Map.Entry<String, Map<String, Set<String>>> from : new TreeMap<>(uses).entrySet()) {
            Integer mine = level.get(from.getKey());
            for (Map.Entry<String, Set<String>> to : new TreeMap<>(from.getValue()).entrySet()) {
                Integer theirs = level.get(to.getKey());
                if (mine == null || theirs == null || theirs < mine) {
                    continue; // unlisted packages are everyPackageOfTheAgentHasALevel's to report
                }
                String where = theirs.equals(mine) ? "of its own level" : "a level above it";
                faults.add(from.getKey() + " uses " + to.getKey() + ", " + where + ": " + new TreeSet<>(to.getValue()));
            }
        }
        return faults;
    }

    /** The packages that use each other, each group sorted (Tarjan's strongly connected components). */
    static List<List<String>> cycles(Map<String, Map<String, Set<String>>> uses) {
        Map<String, Integer> index = new HashMap<>();
        Map<String, Integer> low = new HashMap<>();
        Deque<String> stack = new ArrayDeque<>();
        Set<String> onStack = new HashSet<>();
        List<List<String>> out = new ArrayList<>();
        for (String p : new TreeSet<>(uses.keySet())) {
            if (!index.containsKey(p)) {
                connect(p, uses, index, low, stack, onStack, out);
            }
        }
        return out;
    }

    private static void connect(String p, Map<String, Map<String, Set<String>>> uses, Map<String, Integer> index,
            Map<String, Integer> low, Deque<String> stack, Set<String> onStack, List<List<String>> out) {
        index.put(p, index.size());
        low.put(p, index.get(p));
        stack.push(p);
        onStack.add(p);
        for (String q : new TreeSet<>(uses.getOrDefault(p, Map.of()).keySet())) {
            if (!index.containsKey(q)) {
                connect(q, uses, index, low, stack, onStack, out);
                low.put(p, Math.min(low.get(p), low.get(q)));
            } else if (onStack.contains(q)) {
                low.put(p, Math.min(low.get(p), index.get(q)));
            }
        }
        if (low.get(p).equals(index.get(p))) {
            List<String> group = new ArrayList<>();
            String q;
            do {
                q = stack.pop();
                onStack.remove(q);
                group.add(q);
            } while (!q.equals(p));
            if (group.size() > 1) {
                group.sort(null);
                out.add(group);
            }
        }
    }

    // --- reading the class files ---

    /**
     * The agent's classes and the catalog's, a module of its own (catalog/) that the agent jar
     * shades in: a directory in a reactor build, a jar from the local repository otherwise.
     */
    private static List<Path> agentClasses() throws IOException {
        List<Path> roots = new ArrayList<>();
        for (Class<?> c : List.of(Tracker.class, Catalog.class)) {
            Path where = codeSource(c);
            roots.add(Files.isDirectory(where) ? where : FileSystems.newFileSystem(where).getPath("/"));
        }
        return roots;
    }

    private static Path codeSource(Class<?> c) {
        try {
            return Path.of(c.getProtectionDomain().getCodeSource().getLocation().toURI());
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }

    /** {@link #uses(Path)} of several class trees, together. */
    static Map<String, Map<String, Set<String>>> uses(List<Path> roots) throws IOException {
        Map<String, Map<String, Set<String>>> uses = new TreeMap<>();
        for (Path root : roots) {
            for (Map.Entry<String, Map<String, Set<String>>> from : uses(root).entrySet()) {
                Map<String, Set<String>> mine = uses.computeIfAbsent(from.getKey(), k -> new TreeMap<>());
                from.getValue().forEach((to, examples) -> mine.computeIfAbsent(to, k -> new TreeSet<>()).addAll(examples));
            }
        }
        return uses;
    }

    /** Per package (dotted, under dev.ncclguard), the other packages its classes use, with "Class -> Class" examples. */
    static Map<String, Map<String, Set<String>>> uses(Path classes) throws IOException {
        Map<String, Map<String, Set<String>>> uses = new TreeMap<>();
        List<Path> files;
        try (Stream<Path> walk = Files.walk(classes.resolve(ROOT))) {
            files = walk.filter(f -> f.toString().endsWith(".class")).toList();
        }
        for (Path file : files) {
            String name = classes.relativize(file).toString().replace('\\', '/');
            String own = name.substring(ROOT.length(), name.lastIndexOf('/')).replace('/', '.');
            Map<String, Set<String>> mine = uses.computeIfAbsent(own, k -> new TreeMap<>());
            String self = simpleName(name.substring(0, name.length() - ".class".length()));
            try (InputStream in = Files.newInputStream(file)) {
                for (String type : typesNamed(in)) {
                    Matcher m = TYPE.matcher(type);
                    while (m.find()) {
                        String other = m.group(1).replace('/', '.');
                        if (!other.equals(own)) {
                            int end = type.indexOf(';', m.start());
                            String used = type.substring(m.start(), end < 0 ? type.length() : end);
                            mine.computeIfAbsent(other, k -> new TreeSet<>()).add(self + " -> " + simpleName(used));
                        }
                    }
                }
            }
        }
        return uses;
    }

    private static String simpleName(String internal) {
        String rest = internal.substring(internal.indexOf(ROOT) + ROOT.length());
        return rest.replace('/', '.');
    }

    /** The UTF-8 constants of a class file that are not string literals: names and descriptors. */
    static List<String> typesNamed(InputStream classFile) throws IOException {
        DataInputStream in = new DataInputStream(classFile);
        if (in.readInt() != 0xCAFEBABE) {
            throw new IOException("not a class file");
        }
        in.readUnsignedShort();
        in.readUnsignedShort();
        int count = in.readUnsignedShort();
        String[] utf8 = new String[count];
        Set<Integer> literals = new HashSet<>();
        for (int i = 1; i < count; i++) {
            int tag = in.readUnsignedByte();
            switch (tag) {
                case 1 -> utf8[i] = in.readUTF();
                case 8 -> literals.add(in.readUnsignedShort());
                case 7, 16, 19, 20 -> in.readUnsignedShort();
                case 15 -> {
                    in.readUnsignedByte();
                    in.readUnsignedShort();
                }
                case 3, 4, 9, 10, 11, 12, 17, 18 -> in.readInt();
                case 5, 6 -> {
                    in.readLong();
                    i++;
                }
                default -> throw new IOException("constant pool tag " + tag);
            }
        }
        List<String> named = new ArrayList<>();
        for (int i = 1; i < count; i++) {
            if (utf8[i] != null && !literals.contains(i)) {
                named.add(utf8[i]);
            }
        }
        return named;
    }
}
