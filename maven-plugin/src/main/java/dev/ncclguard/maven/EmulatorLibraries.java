package dev.ncclguard.maven;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.List;
import java.util.Locale;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;

/**
 * The emulator's libraries (libnccl.so.2, libcudart.so.13, libcuda.so.1 and their unversioned
 * names), taken from its artifact {@code dev.ncclguard:ncclguard-emulator:VERSION:jar:linux-x86_64}
 * (entries under {@code linux-x86_64/}) into one directory that JNA and the dynamic loader can be
 * pointed at. Kept apart from Maven's types so that it is tested as it is.
 */
final class EmulatorLibraries {
    static final String GROUP = "dev.ncclguard";
    static final String ARTIFACT = "ncclguard-emulator";
    static final String CLASSIFIER = "linux-x86_64";
    private static final String PREFIX = CLASSIFIER + "/";

    private EmulatorLibraries() {
    }

    /** Null when this machine can run the emulator; else the one line that says why not. */
    static String unsupported(String osName, String osArch) {
        boolean linux = osName.toLowerCase(Locale.ROOT).startsWith("linux");
        boolean x86 = osArch.equals("amd64") || osArch.equals("x86_64");
        return linux && x86 ? null : "ncclguard: the emulator is built for linux-x86_64 only, and this is " + osName
                + " on " + osArch + "; set <emulator>false</emulator> and give the tests real NCCL and CUDA";
    }

    /**
     * Unpacks the libraries of {@code jar} into {@code dir} (emptied first, so that no library of an
     * older emulator stays), each written whole: a temporary file renamed into place.
     *
     * @return the names written
     */
    static List<String> unpack(File jar, File dir) throws IOException {
        Path target = dir.toPath();
        Files.createDirectories(target);
        try (var old = Files.list(target)) {
            for (Path p : old.toList()) {
                if (Files.isRegularFile(p, java.nio.file.LinkOption.NOFOLLOW_LINKS) || Files.isSymbolicLink(p)) {
                    Files.delete(p);
                }
            }
        }
        List<String> names = new ArrayList<>();
        try (ZipFile zip = new ZipFile(jar)) {
            Enumeration<? extends ZipEntry> entries = zip.entries();
            while (entries.hasMoreElements()) {
                ZipEntry e = entries.nextElement();
                String name = e.getName();
                if (e.isDirectory() || !name.startsWith(PREFIX) || name.indexOf('/', PREFIX.length()) >= 0) {
                    continue; // the libraries only, flat: no entry may reach outside dir
                }
                String file = name.substring(PREFIX.length());
                if (file.isEmpty() || file.equals("..") || file.equals(".")) {
                    continue;
                }
                Path tmp = Files.createTempFile(target, "." + file, ".tmp");
                try (InputStream in = zip.getInputStream(e)) {
                    Files.copy(in, tmp, StandardCopyOption.REPLACE_EXISTING);
                    Files.move(tmp, target.resolve(file), StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
                } finally {
                    Files.deleteIfExists(tmp);
                }
                names.add(file);
            }
        }
        if (!names.contains("libnccl.so.2") || !names.contains("libcudart.so.13")) {
            throw new IOException(jar + " holds no " + PREFIX + "libnccl.so.2 and libcudart.so.13: not the emulator's"
                    + " linux-x86_64 jar");
        }
        return names;
    }

    /** The flag that points JNA at the directory, quoted when its path holds white space. */
    static String jnaFlag(File dir) {
        String flag = "-Djna.library.path=" + dir.getAbsolutePath();
        return flag.chars().anyMatch(Character::isWhitespace) ? '"' + flag + '"' : flag;
    }
}
