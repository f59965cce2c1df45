package dev.ncclguard.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ncclguard.catalog.NativeFunction;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class BindingsTest {
    private static Bindings parse(String... lines) {
        return Bindings.parse("b.txt", List.of(lines));
    }

    private static String error(String... lines) {
        return assertThrows(Bindings.BindingsException.class, () -> parse(lines)).getMessage();
    }

    @Test
    void lineMapsAMethodToACatalogFunctionWithJavaArgumentIndexes() {
        Bindings b = parse("# comment", "", "com.acme.Gpu#createComm(I[BI)J = ncclCommInitRank handle=return nranks=0 uniqueId=1 rank=2");
        Bindings.Entry e = b.find("com/acme/Gpu", "createComm", "(I[BI)J");
        assertNotNull(e);
        assertEquals(3, e.line());
        NativeFunction fn = e.fn();
        assertEquals("ncclCommInitRank", fn.symbol());
        assertEquals(Bindings.RESULT, fn.handle());
        assertEquals(0, fn.nranks());
        assertEquals(1, fn.uniqueId());
        assertEquals(2, fn.rank());
        assertNull(b.find("com/acme/Gpu", "createComm", "(I[BIJ)J"), "another descriptor");
        assertTrue(b.hasClass("com/acme/Gpu"));
    }

    @Test
    void withoutADescriptorEveryOverloadMatches() {
        Bindings b = parse("com.acme.Gpu$Inner#destroy = ncclCommDestroy handle=0");
        assertNotNull(b.find("com/acme/Gpu$Inner", "destroy", "(J)I"));
        assertNotNull(b.find("com/acme/Gpu$Inner", "destroy", "(Ljava/lang/Object;)V"));
    }

    @Test
    void aRoleSharingTheHandlesCArgumentFollowsIt() {
        NativeFunction fn = parse("a.B#sync = cudaStreamSynchronize handle=0").find("a/B", "sync", "(J)I").fn();
        assertEquals(0, fn.stream(), "cudaStreamSynchronize's stream is its handle");
    }

    @Test
    void exitTimeCallsMapCArgumentsToJavaArguments() {
        Bindings.Entry e = parse("a.B#abort(IJ)I = ncclCommAbort handle=1").find("a/B", "abort", "(IJ)I");
        int[] map = Bindings.cToJava(dev.ncclguard.catalog.Catalog.lookup("ncclCommAbort"), e.fn());
        assertEquals(1, map[0]);
    }

    @Test
    void badLinesFailNamingTheFileAndLine() {
        assertEquals("ncclguard: bindings file b.txt line 2: unknown function 'ncclFoo': not one that ncclguard follows",
                error("a.B#c = ncclCommDestroy handle=0", "a.B#d = ncclFoo handle=0"));
        assertTrue(error("a.B#c ncclCommDestroy").contains("line 1: expected 'class#method"));
        assertTrue(error("a.B = ncclCommDestroy handle=0").contains("is not class#method"));
        assertTrue(error("a.B#c = ncclCommDestroy rank=0").contains("ncclCommDestroy has no rank"));
        assertTrue(error("a.B#c = ncclCommDestroy").contains("needs handle=<index> or handle=return"));
        assertTrue(error("a.B#c = ncclCommDestroy handle=x").contains("Java argument index"));
        assertTrue(error("a.B#c = ncclCommDestroy handle=-1").contains("Java argument index"));
        assertTrue(error("a.B#c = ncclCommDestroy wat=0").contains("expected role=index"));
        assertTrue(error("a.B#c(J)I = ncclCommDestroy handle=1").contains("the method has 1 argument(s)"));
        assertTrue(error("a.B#c(I)I = ncclCommInitRank handle=return").contains("returns long (J), not I"));
        assertTrue(error("a.B#c = ncclCommInitRank handle=0 rank=return").contains("only the handle"));
        assertTrue(error("a.B#c(J = ncclCommDestroy handle=0").contains("not a JVM method descriptor"));
        assertTrue(error("a.B#c = ncclCommDestroy handle=0 handle=0").contains("given twice"));
        assertTrue(error("a.B#c = ncclCommDestroy handle=0", "a.B#c = ncclCommAbort handle=0").contains("line 2")
                && error("a.B#c = ncclCommDestroy handle=0", "a.B#c = ncclCommAbort handle=0").contains("mapped twice"));
    }

    @Test
    void missingFileFailsWithItsPath(@TempDir Path dir) {
        Path missing = dir.resolve("none.txt");
        String message = assertThrows(Bindings.BindingsException.class, () -> Bindings.load(missing)).getMessage();
        assertEquals("ncclguard: bindings file " + missing + " does not exist; set bindings= to a bindings file,"
                + " or none", message);
    }

    @Test
    void fileIsReadFromDisk(@TempDir Path dir) throws Exception {
        Path file = Files.writeString(dir.resolve("b.txt"), "a.B#c = ncclCommDestroy handle=0\n");
        assertNotNull(Bindings.load(file).find("a/B", "c", "(J)I"));
    }
}
