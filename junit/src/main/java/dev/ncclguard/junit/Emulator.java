package dev.ncclguard.junit;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.function.Function;

/**
 * Puts the emulator of NCCL and the CUDA runtime under this test JVM when its jar
 * ({@code dev.ncclguard:ncclguard-emulator:VERSION:jar:linux-x86_64}) is on the test class path:
 * its libraries unpacked into {@code target/ncclguard-emulator} and that directory put first in
 * {@code jna.library.path}. Once per JVM, before the first test runs ({@link EmulatorListener});
 * NcclGuardExtension does it too, for a launcher that did not register the listener.
 */
final class Emulator {
    /** auto (default: when the jar is on the class path), on (the jar is required), off. */
    static final String PARAMETER = "ncclguard.junit.emulator";
    /** Where the libraries go; default target/ncclguard-emulator (build/ when there is no target/). */
    static final String DIRECTORY_PARAMETER = "ncclguard.junit.emulator.dir";
    static final String JNA_PATH = "jna.library.path";

    private static boolean done;
    private static String problem;

    private Emulator() {
    }

    /**
     * Sets the emulator up, the first time only.
     *
     * @param parameters the JUnit configuration parameters (which fall back to system properties)
     * @return null, or the one line that says why the emulator the project asked for is not there
     */
    static synchronized String setUp(Function<String, Optional<String>> parameters) {
        if (!done) {
            done = true;
            problem = run(parameters, Thread.currentThread().getContextClassLoader(), System.getenv("LD_LIBRARY_PATH"),
                    Path.of(System.getProperty("user.dir")));
            if (problem != null) {
                System.err.println(problem);
            }
        }
        return problem;
    }

    /** The line that failed the set-up, or null. */
    static synchronized String problem() {
        return problem;
    }

    static String run(Function<String, Optional<String>> parameters, ClassLoader loader, String ldPath, Path workDir) {
        String mode = parameters.apply(PARAMETER).orElse("auto").strip().toLowerCase(Locale.ROOT);
        boolean required;
        switch (mode) {
            case "off", "false" -> {
                return null;
            }
            case "on", "true" -> required = true;
            case "auto" -> required = false;
            default -> {
                return "ncclguard: " + PARAMETER + " is '" + mode + "', expected auto, on or off";
            }
        }
        Path source;
        try {
            source = EmulatorLibraries.find(loader != null ? loader : Emulator.class.getClassLoader());
        } catch (IOException e) {
            return "ncclguard: cannot read the emulator's jar on the test class path: " + e.getMessage();
        }
        if (source == null) {
            return required ? "ncclguard: " + PARAMETER + "=on, but no emulator is on the test class path (no "
                    + EmulatorLibraries.MARKER + "): add the test dependency"
                    + " dev.ncclguard:ncclguard-emulator:<version>:jar:linux-x86_64" : null;
        }
        String unsupported = EmulatorLibraries.unsupported(System.getProperty("os.name"), System.getProperty("os.arch"));
        if (unsupported != null) {
            return unsupported;
        }
        Path dir = parameters.apply(DIRECTORY_PARAMETER).map(String::strip).filter(s -> !s.isEmpty()).map(Path::of)
                .orElseGet(() -> defaultDirectory(workDir));
        dir = workDir.resolve(dir).normalize();
        String userPath = System.getProperty(JNA_PATH, "");
        String nccl = ncclIn(userPath, dir);
        String how = JNA_PATH;
        if (nccl == null) {
            nccl = ncclIn(ldPath == null ? "" : ldPath, dir);
            how = "LD_LIBRARY_PATH";
        }
        if (nccl != null && !required) {
            System.err.println("ncclguard: the emulator on the test class path is not used: " + how + " names an NCCL ("
                    + nccl + "); set the JUnit configuration parameter " + PARAMETER + "=on to put the emulator first");
            return null;
        }
        String loaded = ncclLoaded(dir);
        if (loaded != null) {
            return "ncclguard: an NCCL (" + loaded + ") was loaded before the emulator on the test class path could be"
                    + " put under this JVM; load NCCL in a test, not in a static initializer that runs at discovery";
        }
        List<String> names;
        try {
            names = EmulatorLibraries.unpack(source, dir);
        } catch (IOException | RuntimeException e) {
            return "ncclguard: cannot unpack the emulator from " + source + " into " + dir + ": " + e.getMessage()
                    + "; set the JUnit configuration parameter " + DIRECTORY_PARAMETER + " to a writable directory";
        }
        System.setProperty(JNA_PATH, userPath.isEmpty() ? dir.toString() : dir + File.pathSeparator + userPath);
        System.err.println("ncclguard: emulator of NCCL and CUDA from " + source.getFileName() + " unpacked into " + dir
                + " (" + names.size() + " files), first in " + JNA_PATH
                + (nccl != null ? ", ahead of the NCCL in " + how + " (" + nccl + ", " + PARAMETER + "=on)" : ""));
        return null;
    }

    private static Path defaultDirectory(Path workDir) {
        boolean gradle = !Files.isDirectory(workDir.resolve("target")) && Files.isDirectory(workDir.resolve("build"));
        return workDir.resolve(gradle ? "build" : "target").resolve("ncclguard-emulator");
    }

    /** A libnccl in one of the path's directories other than ours, or null. */
    private static String ncclIn(String searchPath, Path ours) {
        for (String entry : searchPath.split(File.pathSeparator)) {
            if (entry.isBlank()) {
                continue;
            }
            Path d = Path.of(entry).toAbsolutePath().normalize();
            if (d.equals(ours)) {
                continue;
            }
            for (String name : new String[] {"libnccl.so.2", "libnccl.so"}) {
                if (Files.exists(d.resolve(name))) {
                    return d.resolve(name).toString();
                }
            }
        }
        return null;
    }

    /** A libnccl already mapped into this process from elsewhere than ours (Linux: /proc/self/maps), or null. */
    private static String ncclLoaded(Path ours) {
        Path maps = Path.of("/proc/self/maps");
        if (!Files.isReadable(maps)) {
            return null;
        }
        try (var lines = Files.lines(maps)) {
            return lines.map(l -> l.indexOf('/') >= 0 ? l.substring(l.indexOf('/')) : "")
                    .filter(p -> p.contains("/libnccl.so") && !Path.of(p).getParent().equals(ours))
                    .findFirst().orElse(null);
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }
}
