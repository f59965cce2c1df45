package dev.ncclguard.junit;

import java.io.IOException;
import java.io.InputStream;
import java.net.JarURLConnection;
import java.net.URISyntaxException;
import java.net.URL;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Enumeration;
import java.util.List;
import java.util.Locale;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;

/**
 * The emulator's libraries, taken from its jar ({@code dev.ncclguard:ncclguard-emulator:VERSION:jar:linux-x86_64},
 * entries under {@code linux-x86_64/}) found on the test class path, into a directory JNA is pointed
 * at. The Maven plugin has its own copy (maven-plugin's EmulatorLibraries): this module must not
 * depend on the plugin, and here several forked test JVMs may unpack at once, so a file is replaced
 * only when it differs and the directory is never emptied.
 */
final class EmulatorLibraries {
    static final String PREFIX = "linux-x86_64/";
    static final String MARKER = PREFIX + "libnccl.so.2";

    private EmulatorLibraries() {
    }

    /** Null when this machine can run the emulator; else the one line that says why not. */
    static String unsupported(String osName, String osArch) {
        boolean linux = osName.toLowerCase(Locale.ROOT).startsWith("linux");
        boolean x86 = osArch.equals("amd64") || osArch.equals("x86_64");
        return linux && x86 ? null : "ncclguard: the emulator on the test class path is built for linux-x86_64 only, and"
                + " this is " + osName + " on " + osArch + "; set the JUnit configuration parameter "
                + Emulator.PARAMETER + "=off (or take ncclguard-emulator off the test class path) and give the tests"
                + " real NCCL and CUDA";
    }

    /** The jar (or class path directory) whose {@code linux-x86_64/libnccl.so.2} the loader finds; null if none. */
    static Path find(ClassLoader loader) throws IOException {
        URL url = loader == null ? ClassLoader.getSystemResource(MARKER) : loader.getResource(MARKER);
        if (url == null) {
            return null;
        }
        try {
            if (url.getProtocol().equals("jar")) {
                return Path.of(((JarURLConnection) url.openConnection()).getJarFileURL().toURI());
            }
            if (url.getProtocol().equals("file")) {
                return Path.of(url.toURI()).getParent().getParent();
            }
        } catch (URISyntaxException | IllegalArgumentException e) {
            throw new IOException("cannot read " + url + ": " + e.getMessage(), e);
        }
        throw new IOException("cannot read " + url + ": neither a jar nor a directory");
    }

    /**
     * Copies the libraries of {@code source} (a jar, or a directory holding linux-x86_64/) into
     * {@code dir}: a file already there with the same bytes is kept (a sibling JVM may have it
     * mapped), any other is written to a temporary file beside it and renamed into place.
     *
     * @return the names now in dir
     */
    static List<String> unpack(Path source, Path dir) throws IOException {
        Files.createDirectories(dir);
        List<String> names = new ArrayList<>();
        if (Files.isDirectory(source)) {
            try (var files = Files.list(source.resolve(PREFIX))) {
                for (Path p : files.sorted().toList()) {
                    if (Files.isRegularFile(p)) {
                        try (InputStream in = Files.newInputStream(p)) {
                            place(in, dir, p.getFileName().toString());
                        }
                        names.add(p.getFileName().toString());
                    }
                }
            }
        } else {
            try (ZipFile zip = new ZipFile(source.toFile())) {
                Enumeration<? extends ZipEntry> entries = zip.entries();
                while (entries.hasMoreElements()) {
                    ZipEntry e = entries.nextElement();
                    String name = e.getName();
                    if (e.isDirectory() || !name.startsWith(PREFIX) || name.indexOf('/', PREFIX.length()) >= 0) {
                        continue; // the libraries only, flat: no entry may reach outside dir
                    }
                    String file = name.substring(PREFIX.length());
                    if (file.isEmpty() || file.equals(".") || file.equals("..")) {
                        continue;
                    }
                    try (InputStream in = zip.getInputStream(e)) {
                        place(in, dir, file);
                    }
                    names.add(file);
                }
            }
        }
        if (!names.contains("libnccl.so.2") || !names.contains("libcudart.so.13")) {
            throw new IOException(source + " holds no " + PREFIX + "libnccl.so.2 and libcudart.so.13: not the"
                    + " emulator's linux-x86_64 jar");
        }
        return names;
    }

    private static void place(InputStream in, Path dir, String file) throws IOException {
        byte[] bytes = in.readAllBytes();
        Path target = dir.resolve(file);
        if (Files.isRegularFile(target, LinkOption.NOFOLLOW_LINKS) && Files.size(target) == bytes.length
                && Arrays.equals(Files.readAllBytes(target), bytes)) {
            return;
        }
        Path tmp = Files.createTempFile(dir, "." + file, ".tmp");
        try {
            Files.write(tmp, bytes);
            Files.move(tmp, target, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } finally {
            Files.deleteIfExists(tmp);
        }
    }
}
