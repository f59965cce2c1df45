package dev.ncclguard.bridge.natives;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

class ClassScanTest {
    private final ClassScan scan = new ClassScan(List.of("cudaEventQuery", "ncclCommInitRank", "ncclCommDestroy"));

    @Test
    void classWithANativeMethodOfACatalogNameMatches() {
        assertTrue(scan.hasNativeNamed(NativeFixtures.bytesOf(NativeFixtures.Jni.class)));
    }

    @Test
    void javaMethodsAndInterfaceMethodsOfACatalogNameDoNotMatch() {
        assertFalse(scan.hasNativeNamed(NativeFixtures.bytesOf(NativeFixtures.JavaOnly.class)));
        assertFalse(scan.hasNativeNamed(NativeFixtures.bytesOf(NativeFixtures.Mapped.class)));
    }

    @Test
    void nativeMethodsOfOtherNamesDoNotMatch() {
        assertFalse(scan.hasNativeNamed(NativeFixtures.bytesOf(NativeFixtures.OtherNatives.class)));
        assertFalse(scan.hasNativeNamed(NativeFixtures.bytesOf(String.class)));
    }

    @Test
    void malformedBytesNeverMatchNorThrow() {
        byte[] bytes = NativeFixtures.bytesOf(NativeFixtures.Jni.class);
        assertFalse(scan.hasNativeNamed(java.util.Arrays.copyOf(bytes, bytes.length / 2)));
        assertFalse(scan.hasNativeNamed(new byte[] {1, 2, 3}));
    }

    @Test
    void bridgeIsJnaDirectForAClassUsingJnaNativeJavaCppForBytedecoElseJni() {
        assertEquals(NativeBridge.JNI, ClassScan.bridgeOf(NativeFixtures.bytesOf(NativeFixtures.Jni.class)));
        assertEquals(NativeBridge.JNA_DIRECT, ClassScan.bridgeOf(NativeFixtures.bytesOf(JnaDirect.class)));
    }

    /** Registers itself with JNA's direct mapping, as such classes do. */
    static class JnaDirect {
        static {
            com.sun.jna.Native.register("c");
        }

        static native int cudaEventQuery(long event);
    }
}
