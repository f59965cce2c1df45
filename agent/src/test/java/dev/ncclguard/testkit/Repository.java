package dev.ncclguard.testkit;

import java.io.File;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;

/** Files of the repository (docs/, scripts), and where the test's own classes come from. */
public final class Repository {
    private Repository() {
    }

    /** A file of the repository, found from the test's working directory or one above it. */
    public static Path file(String file) {
        for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
            Path p = dir.resolve(file);
            if (Files.isRegularFile(p)) {
                return p;
            }
        }
        throw new IllegalStateException("no " + file + " from " + Path.of("").toAbsolutePath());
    }

    /** A class path of the jars or folders these classes were loaded from, for a child JVM's -cp. */
    public static String classpathOf(Class<?>... classes) {
        StringBuilder cp = new StringBuilder();
        for (Class<?> c : classes) {
            if (cp.length() > 0) {
                cp.append(File.pathSeparator);
            }
            cp.append(codeSource(c));
        }
        return cp.toString();
    }

    private static Path codeSource(Class<?> c) {
        try {
            return Path.of(c.getProtectionDomain().getCodeSource().getLocation().toURI());
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }
}
