package dev.ncclguard.bridge.interposer;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Arrays;
import java.util.Locale;
import java.util.Set;

/**
 * Puts the agent's native library (a resource of the agent's own class loader) in a file it can
 * load, and loads it from this class, which the agent's loader defined: JNI_OnLoad then finds
 * {@link Interposer} through that loader. The file lies in a directory of this user alone (mode
 * 0700, owned by this uid, no link) under java.io.tmpdir or the option native-dir:
 * {@code ncclguard-<uid>/<content hash>/libncclguard.so}, reused by every JVM of the user that runs
 * the same build, replaced whole (a temporary file renamed over it) if its content differs. A
 * directory there that is not this user's, or not private, is never used: a fresh private one is
 * made instead. Nothing another user can write is ever loaded.
 */
final class NativeLibraryFile {
    /** The library of each architecture the agent jar may carry, by its folder. */
    /** The library's resource for a platform folder; concatenated, as java.util.Formatter loads regex classes in premain. */
    static String resource(String platform) {
        return "ncclguard-native/" + platform + "/libncclguard.so";
    }
    static final String FILE = "libncclguard.so";
    /** Loads this file instead of the extracted one (tests simulate a library that cannot be loaded). */
    static final String TEST_LIBRARY = "ncclguard.test.native-library";
    private static final Set<PosixFilePermission> PRIVATE = PosixFilePermissions.fromString("rwx------");

    /** Why the native part is off, in one line with what to do; null when it is loaded. */
    private final String failure;
    private final Path path;

    private NativeLibraryFile(Path path, String failure) {
        this.path = path;
        this.failure = failure;
    }

    Path path() {
        return path;
    }

    String failure() {
        return failure;
    }

    /** System.load: what JDK 17 to 23 use. */
    static final NativePart.Loader SYSTEM_LOAD = new NativePart.Loader() {
        @Override
        public void load(Class<?> from, String path) {
            System.load(path);
        }
    };

    /** Extracts (or reuses) and loads the library; never throws. */
    static NativeLibraryFile load(String nativeDir, NativePart.Loader loader) {
        String os = System.getProperty("os.name", "?");
        String arch = System.getProperty("os.arch", "?");
        String platform = platform(os, arch);
        if (platform == null) {
            return failed(null, "its library is built for Linux on x86-64 and aarch64, and this JVM runs on " + os + " "
                    + arch);
        }
        String resource = resource(platform);
        Path file;
        String test = System.getProperty(TEST_LIBRARY);
        if (test != null) {
            file = Path.of(test);
        } else {
            byte[] bytes;
            try (InputStream in = NativeLibraryFile.class.getClassLoader().getResourceAsStream(resource)) {
                if (in == null) {
                    return failed(null, "the agent jar holds no " + resource + " (built without its native part for "
                            + platform + ")");
                }
                bytes = in.readAllBytes();
            } catch (IOException | RuntimeException e) {
                return failed(null, "cannot read " + resource + " from the agent jar: " + e);
            }
            Path base = Path.of(nativeDir != null ? nativeDir : System.getProperty("java.io.tmpdir", "/tmp"));
            try {
                file = extract(base, bytes);
            } catch (IOException | RuntimeException e) {
                return failed(null, "cannot write it under " + base + " (" + e + "): set native-dir to a directory"
                        + " of yours that is writable");
            }
        }
        try {
            loader.load(NativeLibraryFile.class, file.toAbsolutePath().toString());
        } catch (UnsatisfiedLinkError | SecurityException e) {
            return failed(file, "cannot load " + file + ": " + e.getMessage() + hint(e.getMessage()));
        }
        return new NativeLibraryFile(file, null);
    }

    /** The library's folder for this JVM's os.name and os.arch, or null where there is none. */
    static String platform(String os, String arch) {
        if (!os.toLowerCase(Locale.ROOT).startsWith("linux")) {
            return null;
        }
        switch (arch) {
            case "amd64":
            case "x86_64":
                return "linux-x86_64";
            case "aarch64":
            case "arm64":
                return "linux-aarch64";
            default:
                return null;
        }
    }

    private static NativeLibraryFile failed(Path path, String why) {
        return new NativeLibraryFile(path, why);
    }

    /** What the dynamic linker's words mean, and what to do. */
    private static String hint(String message) {
        String m = message == null ? "" : message;
        if (m.contains("failed to map segment") || m.contains("operation not permitted")) {
            return " (its directory is on a file system mounted noexec: set native-dir to a directory that may"
                    + " hold programs)";
        }
        if (m.contains("GLIBC") || m.contains("musl") || m.contains("version `")) {
            return " (it needs glibc 2.34 or later; musl-based systems such as Alpine are not supported)";
        }
        if (m.contains("ELF") || m.contains("wrong ELF class")) {
            return " (not a library for this machine's architecture)";
        }
        return "";
    }

    /** The library's file under {@code base}, written now or found intact. */
    static Path extract(Path base, byte[] bytes) throws IOException {
        Path mine = privateDir(base.resolve("ncclguard-" + uid()));
        if (mine == null) {
            // someone else's, or not private: a directory of this JVM's own, removed at exit
            mine = Files.createTempDirectory(base, "ncclguard-", PosixFilePermissions.asFileAttribute(PRIVATE));
            Path file = write(mine, bytes);
            file.toFile().deleteOnExit();
            mine.toFile().deleteOnExit();
            return file;
        }
        Path dir = privateDir(mine.resolve(hash(bytes)));
        if (dir == null) {
            throw new IOException(mine.resolve(hash(bytes)) + " is not a private directory of this user");
        }
        Path file = dir.resolve(FILE);
        if (intact(file, bytes)) {
            return file;
        }
        return write(dir, bytes);
    }

    /** {@code dir}, made if absent; null unless it is a real directory of this uid that only it may use. */
    private static Path privateDir(Path dir) throws IOException {
        try {
            Files.createDirectory(dir, PosixFilePermissions.asFileAttribute(PRIVATE));
        } catch (FileAlreadyExistsException e) {
            // checked below like any other
        }
        PosixFileAttributes a = Files.readAttributes(dir, PosixFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
        if (!a.isDirectory() || a.isSymbolicLink()) {
            return null;
        }
        Object owner = Files.getAttribute(dir, "unix:uid", LinkOption.NOFOLLOW_LINKS);
        if (!(owner instanceof Integer) || (Integer) owner != uid()) {
            return null;
        }
        return a.permissions().equals(PRIVATE) ? dir : null;
    }

    private static boolean intact(Path file, byte[] bytes) {
        try {
            PosixFileAttributes a = Files.readAttributes(file, PosixFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
            return a.isRegularFile() && a.size() == bytes.length && Arrays.equals(Files.readAllBytes(file), bytes);
        } catch (IOException | RuntimeException e) {
            return false;
        }
    }

    /** Whole or not at all: a temporary file of the same directory, renamed over the library's name. */
    private static Path write(Path dir, byte[] bytes) throws IOException {
        Path tmp = Files.createTempFile(dir, FILE + ".", ".tmp",
                PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        try {
            Files.write(tmp, bytes);
            Files.setPosixFilePermissions(tmp, PosixFilePermissions.fromString("r-x------"));
            return Files.move(tmp, dir.resolve(FILE), StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } finally {
            Files.deleteIfExists(tmp);
        }
    }

    private static int uid() throws IOException {
        return (Integer) Files.getAttribute(Path.of("/proc/self"), "unix:uid");
    }

    /** 64 bits of FNV-1a over the bytes, as 16 hex digits: a name per build, not a check (the bytes are compared). */
    static String hash(byte[] bytes) {
        long h = 0xcbf29ce484222325L;
        for (byte b : bytes) {
            h = (h ^ (b & 0xff)) * 0x100000001b3L;
        }
        String hex = Long.toHexString(h);
        return "0".repeat(16 - hex.length()) + hex;
    }
}
