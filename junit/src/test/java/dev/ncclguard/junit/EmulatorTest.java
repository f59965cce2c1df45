package dev.ncclguard.junit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.OutputStream;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import java.util.zip.ZipEntry;
import java.util.zip.ZipOutputStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The set-up of the emulator found on the class path, on a jar made here (ExtensionIT's consumer build runs the real one). */
class EmulatorTest {
    @TempDir
    Path tmp;
    private String savedPath;

    @BeforeEach
    void savePath() {
        savedPath = System.getProperty(Emulator.JNA_PATH);
        System.clearProperty(Emulator.JNA_PATH);
    }

    @AfterEach
    void restorePath() {
        if (savedPath == null) {
            System.clearProperty(Emulator.JNA_PATH);
        } else {
            System.setProperty(Emulator.JNA_PATH, savedPath);
        }
    }

    @Test
    void librariesOfTheJarOnTheClassPathAreUnpackedAndPutFirstInTheJnaPath() throws IOException {
        System.setProperty(Emulator.JNA_PATH, "/opt/mine");
        assertNull(Emulator.run(params(), loader(emulatorJar("libnccl.so.2", "libcudart.so.13")), null, tmp));
        Path dir = tmp.resolve("target/ncclguard-emulator");
        assertArrayEquals("libnccl.so.2 bytes".getBytes(StandardCharsets.UTF_8), Files.readAllBytes(dir.resolve("libnccl.so.2")));
        assertEquals(dir + ":/opt/mine", System.getProperty(Emulator.JNA_PATH));
    }

    @Test
    void anIdenticalLibraryAlreadyThereIsKept() throws IOException {
        Path jar = emulatorJar("libnccl.so.2", "libcudart.so.13");
        assertNull(Emulator.run(params(), loader(jar), null, tmp));
        Path lib = tmp.resolve("target/ncclguard-emulator/libnccl.so.2");
        Object inode = Files.readAttributes(lib, BasicFileAttributes.class).fileKey();
        System.clearProperty(Emulator.JNA_PATH);
        assertNull(Emulator.run(params(), loader(jar), null, tmp));
        assertEquals(inode, Files.readAttributes(lib, BasicFileAttributes.class).fileKey(), "rewritten");
    }

    @Test
    void theDirectoryParameterIsHonoured() throws IOException {
        assertNull(Emulator.run(params(Emulator.DIRECTORY_PARAMETER, "libs/emu"),
                loader(emulatorJar("libnccl.so.2", "libcudart.so.13")), null, tmp));
        assertTrue(Files.isRegularFile(tmp.resolve("libs/emu/libcudart.so.13")));
        assertEquals(tmp.resolve("libs/emu").toString(), System.getProperty(Emulator.JNA_PATH));
    }

    @Test
    void aJnaPathThatNamesARealNcclWinsUnlessTheEmulatorIsOn() throws IOException {
        Path real = Files.createDirectories(tmp.resolve("real"));
        Files.writeString(real.resolve("libnccl.so.2"), "real");
        System.setProperty(Emulator.JNA_PATH, real.toString());
        ClassLoader jar = loader(emulatorJar("libnccl.so.2", "libcudart.so.13"));
        assertNull(Emulator.run(params(), jar, null, tmp));
        assertEquals(real.toString(), System.getProperty(Emulator.JNA_PATH));
        assertNull(Emulator.run(params(Emulator.PARAMETER, "on"), jar, null, tmp));
        assertEquals(tmp.resolve("target/ncclguard-emulator") + ":" + real, System.getProperty(Emulator.JNA_PATH));
    }

    @Test
    void anLdLibraryPathThatNamesARealNcclWinsToo() throws IOException {
        Path real = Files.createDirectories(tmp.resolve("real"));
        Files.writeString(real.resolve("libnccl.so"), "real");
        assertNull(Emulator.run(params(), loader(emulatorJar("libnccl.so.2", "libcudart.so.13")), "/x:" + real, tmp));
        assertNull(System.getProperty(Emulator.JNA_PATH));
    }

    @Test
    void offLeavesTheJvmAsItIs() throws IOException {
        assertNull(Emulator.run(params(Emulator.PARAMETER, "off"), loader(emulatorJar("libnccl.so.2", "libcudart.so.13")),
                null, tmp));
        assertNull(System.getProperty(Emulator.JNA_PATH));
        assertTrue(Files.notExists(tmp.resolve("target")));
    }

    @Test
    void withoutTheJarAutoDoesNothingAndOnSaysWhatToAdd() throws IOException {
        ClassLoader none = loader(Files.createDirectories(tmp.resolve("empty")));
        assertNull(Emulator.run(params(), none, null, tmp));
        assertNull(System.getProperty(Emulator.JNA_PATH));
        String line = Emulator.run(params(Emulator.PARAMETER, "on"), none, null, tmp);
        assertEquals("ncclguard: ncclguard.junit.emulator=on, but no emulator is on the test class path (no"
                + " linux-x86_64/libnccl.so.2): add the test dependency"
                + " dev.ncclguard:ncclguard-emulator:<version>:jar:linux-x86_64", line);
    }

    @Test
    void aBadModeIsOneLine() {
        assertEquals("ncclguard: ncclguard.junit.emulator is 'sometimes', expected auto, on or off",
                Emulator.run(params(Emulator.PARAMETER, "sometimes"), getClass().getClassLoader(), null, tmp));
    }

    @Test
    void aJarWithoutTheRuntimeIsNotTheEmulator() throws IOException {
        Path jar = emulatorJar("libnccl.so.2");
        String line = Emulator.run(params(), loader(jar), null, tmp);
        assertEquals("ncclguard: cannot unpack the emulator from " + jar + " into " + tmp.resolve("target/ncclguard-emulator")
                + ": " + jar + " holds no linux-x86_64/libnccl.so.2 and libcudart.so.13: not the emulator's linux-x86_64"
                + " jar; set the JUnit configuration parameter ncclguard.junit.emulator.dir to a writable directory", line);
        assertNull(System.getProperty(Emulator.JNA_PATH));
    }

    @Test
    void anUnwritableDirectoryIsOneLine() throws IOException {
        Files.writeString(tmp.resolve("file"), "x");
        String line = Emulator.run(params(Emulator.DIRECTORY_PARAMETER, "file/emu"),
                loader(emulatorJar("libnccl.so.2", "libcudart.so.13")), null, tmp);
        assertTrue(line.startsWith("ncclguard: cannot unpack the emulator from "), line);
        assertTrue(line.endsWith("; set the JUnit configuration parameter ncclguard.junit.emulator.dir to a writable"
                + " directory"), line);
        assertNull(System.getProperty(Emulator.JNA_PATH));
    }

    @Test
    void onlyLinuxX86IsSupported() {
        assertNull(EmulatorLibraries.unsupported("Linux", "amd64"));
        assertEquals("ncclguard: the emulator on the test class path is built for linux-x86_64 only, and this is Mac OS X"
                + " on aarch64; set the JUnit configuration parameter ncclguard.junit.emulator=off (or take"
                + " ncclguard-emulator off the test class path) and give the tests real NCCL and CUDA",
                EmulatorLibraries.unsupported("Mac OS X", "aarch64"));
    }

    private static Function<String, Optional<String>> params(String... keyValues) {
        Map<String, String> map = keyValues.length == 0 ? Map.of() : Map.of(keyValues[0], keyValues[1]);
        return k -> Optional.ofNullable(map.get(k));
    }

    private Path emulatorJar(String... libraries) throws IOException {
        Path jar = Files.createTempFile(tmp, "ncclguard-emulator", "-linux-x86_64.jar");
        try (ZipOutputStream zip = new ZipOutputStream(Files.newOutputStream(jar))) {
            zip.putNextEntry(new ZipEntry("linux-x86_64/"));
            for (String lib : libraries) {
                zip.putNextEntry(new ZipEntry("linux-x86_64/" + lib));
                OutputStream out = zip;
                out.write((lib + " bytes").getBytes(StandardCharsets.UTF_8));
            }
            zip.putNextEntry(new ZipEntry("linux-x86_64/sub/../../evil"));
        }
        return jar;
    }

    private static ClassLoader loader(Path jarOrDir) throws IOException {
        return new URLClassLoader(new URL[] {jarOrDir.toUri().toURL()}, null);
    }
}
