package dev.ncclguard.catalog;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** The header the native library was built from, against the catalog it was generated from. */
class CHeaderInBuildTest {

    @Test
    void headerTheLibraryWasBuiltFromIsWhatTheCatalogGenerates() throws IOException {
        String where = System.getProperty("ncclguard.test.catalogHeader");
        assertNotNull(where, "the build passes the generated header's path in ncclguard.test.catalogHeader");
        Path header = Path.of(where);
        assertTrue(Files.exists(header), header + " is missing: the build generates it before make");
        assertEquals(CHeader.generate(), Files.readString(header, StandardCharsets.UTF_8),
                "the header in the build is stale: rebuild the native-shim module");
    }
}
