package dev.ncclguard.bridge.interposer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class NativeLibraryFileTest {
    private static final byte[] BYTES = "a library".getBytes(StandardCharsets.US_ASCII);

    @TempDir
    Path base;

    private static String mode(Path p) throws Exception {
        return PosixFilePermissions.toString(Files.getPosixFilePermissions(p));
    }

    private static String uid() throws Exception {
        return Files.getAttribute(Path.of("/proc/self"), "unix:uid").toString();
    }

    @Test
    void theFileLiesInPrivateDirectoriesOfThisUserNamedAfterItsContent() throws Exception {
        Path file = NativeLibraryFile.extract(base, BYTES);
        assertEquals(base.resolve("ncclguard-" + uid()).resolve(NativeLibraryFile.hash(BYTES)).resolve("libncclguard.so"),
                file);
        assertArrayEquals(BYTES, Files.readAllBytes(file));
        assertEquals("rwx------", mode(file.getParent()));
        assertEquals("rwx------", mode(file.getParent().getParent()));
        assertEquals("r-x------", mode(file));
    }

    @Test
    void anIntactFileIsReusedAndOneWithOtherContentReplacedWhole() throws Exception {
        Path file = NativeLibraryFile.extract(base, BYTES);
        long modified = Files.getLastModifiedTime(file).toMillis();
        assertEquals(file, NativeLibraryFile.extract(base, BYTES));
        assertEquals(modified, Files.getLastModifiedTime(file).toMillis());
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-------"));
        Files.write(file, "planted".getBytes(StandardCharsets.US_ASCII));
        assertEquals(file, NativeLibraryFile.extract(base, BYTES));
        assertArrayEquals(BYTES, Files.readAllBytes(file));
        try (var files = Files.list(file.getParent())) {
            assertEquals(1, files.count(), "no temporary file left");
        }
    }

    @Test
    void aDirectoryOfTheNameThatOthersMayWriteIsNeverUsed() throws Exception {
        Path shared = Files.createDirectory(base.resolve("ncclguard-" + uid()));
        Files.setPosixFilePermissions(shared, PosixFilePermissions.fromString("rwxrwxrwx"));
        Path file = NativeLibraryFile.extract(base, BYTES);
        assertNotEquals(shared, file.getParent());
        assertNotEquals(shared, file.getParent().getParent());
        assertEquals(base, file.getParent().getParent(), "a fresh private directory of this JVM's: " + file);
        assertEquals("rwx------", mode(file.getParent()));
        assertArrayEquals(BYTES, Files.readAllBytes(file));
    }

    @Test
    void differentContentGetsADirectoryOfItsOwn() throws Exception {
        Path a = NativeLibraryFile.extract(base, BYTES);
        Path b = NativeLibraryFile.extract(base, "another build".getBytes(StandardCharsets.US_ASCII));
        assertNotEquals(a.getParent(), b.getParent());
        assertArrayEquals(BYTES, Files.readAllBytes(a));
    }

    @Test
    void eachArchitectureOfTheJvmLoadsTheLibraryOfItsOwnFolder() {
        assertEquals("linux-x86_64", NativeLibraryFile.platform("Linux", "amd64"));
        assertEquals("linux-aarch64", NativeLibraryFile.platform("Linux", "aarch64"));
        assertNull(NativeLibraryFile.platform("Linux", "ppc64le"));
        assertNull(NativeLibraryFile.platform("Mac OS X", "aarch64"));
    }
}
