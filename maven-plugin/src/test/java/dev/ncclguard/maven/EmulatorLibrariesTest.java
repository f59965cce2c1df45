package dev.ncclguard.maven;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.zip.ZipEntry;
import java.util.zip.ZipOutputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class EmulatorLibrariesTest {
    @TempDir
    Path dir;

    private File jar(String... entries) throws IOException {
        Path jar = dir.resolve("emu.jar");
        try (OutputStream file = Files.newOutputStream(jar); ZipOutputStream zip = new ZipOutputStream(file)) {
            for (String e : entries) {
                zip.putNextEntry(new ZipEntry(e));
                zip.write(e.getBytes(StandardCharsets.UTF_8));
                zip.closeEntry();
            }
        }
        return jar.toFile();
    }

    @Test
    void theLibrariesLandFlatInTheDirectoryAndNothingElse() throws IOException {
        File jar = jar("META-INF/LICENSE", "linux-x86_64/libnccl.so.2", "linux-x86_64/libcudart.so.13",
                "linux-x86_64/sub/evil.so", "linux-x86_64/../../escape.so");
        Path out = dir.resolve("target/ncclguard-emulator");
        Files.createDirectories(out);
        Files.writeString(out.resolve("libold.so"), "an older emulator's");
        List<String> names = EmulatorLibraries.unpack(jar, out.toFile());
        assertEquals(List.of("libnccl.so.2", "libcudart.so.13"), names);
        try (var files = Files.list(out)) {
            assertEquals(List.of("libcudart.so.13", "libnccl.so.2"), files.map(p -> p.getFileName().toString()).sorted().toList());
        }
        assertEquals("linux-x86_64/libnccl.so.2", Files.readString(out.resolve("libnccl.so.2")));
        assertFalse(Files.exists(dir.resolve("escape.so")));
    }

    @Test
    void aJarWithoutTheLibrariesIsRefused() throws IOException {
        File jar = jar("META-INF/LICENSE");
        IOException e = assertThrows(IOException.class, () -> EmulatorLibraries.unpack(jar, dir.resolve("out").toFile()));
        assertTrue(e.getMessage().contains("not the emulator's linux-x86_64 jar"), e.getMessage());
    }

    @Test
    void onlyLinuxOnX86RunsIt() {
        assertNull(EmulatorLibraries.unsupported("Linux", "amd64"));
        assertTrue(EmulatorLibraries.unsupported("Linux", "aarch64").startsWith("ncclguard: the emulator is built for"
                + " linux-x86_64 only, and this is Linux on aarch64"));
        assertTrue(EmulatorLibraries.unsupported("Mac OS X", "x86_64") != null);
    }

    @Test
    void theJnaFlagIsQuotedWhenThePathHoldsSpaces() {
        assertEquals("-Djna.library.path=/b/t", EmulatorLibraries.jnaFlag(new File("/b/t")));
        assertEquals("\"-Djna.library.path=/my b/t\"", EmulatorLibraries.jnaFlag(new File("/my b/t")));
    }

    @Test
    void anArgLineWithoutTheAgentIsNamedWithItsFix() {
        assertEquals("'s <argLine>-Xmx256m</argLine> replaces the agent that prepare-agent put in the property argLine:"
                + " write <argLine>@{argLine} -Xmx256m</argLine>", ArgLines.fix("-Xmx256m", "argLine"));
        assertNull(ArgLines.fix("@{argLine} -Xmx256m", "argLine"));
    }
}
