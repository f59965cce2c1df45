package dev.ncclguard.bridge;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;

import com.sun.jna.Memory;
import com.sun.jna.Pointer;
import com.sun.jna.PointerType;
import com.sun.jna.ptr.PointerByReference;
import dev.ncclguard.bootstrap.JnaHandle;
import java.net.URL;
import java.net.URLClassLoader;
import org.junit.jupiter.api.Test;

class JnaHandlesTest {
    /** A typed handle, as some bindings declare cudaEvent_t. */
    public static class Event extends PointerType {
        public Event(Pointer p) {
            super(p);
        }
    }

    @Test
    void pointersAndPointerTypesAreReadByClassesGeneratedInJnasOwnPackageAndLoader() {
        for (Class<?> type : new Class<?>[] {Pointer.class, Memory.class, Event.class, PointerByReference.class}) {
            JnaHandle reader = JnaHandles.of(type);
            assertSame(type, reader.type);
            assertEquals("com.sun.jna", reader.getClass().getPackageName(), type.getName());
            assertSame(Pointer.class.getClassLoader(), reader.getClass().getClassLoader());
        }
        assertEquals(0x1234L, JnaHandles.of(Pointer.class).of(new Pointer(0x1234L)));
        assertEquals(0x5678L, JnaHandles.of(Event.class).of(new Event(new Pointer(0x5678L))));
        assertEquals(0L, JnaHandles.of(Event.class).of(new Event(null)));
        PointerByReference ref = new PointerByReference();
        assertEquals(Pointer.nativeValue(ref.getPointer()), JnaHandles.of(PointerByReference.class).of(ref));
    }

    @Test
    void otherArgumentClassesAreReadAsBefore() {
        assertEquals(42L, JnaHandles.of(Long.class).of(42L));
        assertEquals("dev.ncclguard.bridge", JnaHandles.of(Long.class).getClass().getPackageName());
    }

    /** JNA's classes from its jar again, child first; the rest (the agent's bootstrap classes) from the parent. */
    private static final class OwnJna extends URLClassLoader {
        OwnJna(URL jar) {
            super(new URL[] {jar}, JnaHandlesTest.class.getClassLoader());
        }

        @Override
        protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
            if (!name.startsWith("com.sun.jna.")) {
                return super.loadClass(name, resolve);
            }
            synchronized (getClassLoadingLock(name)) {
                Class<?> c = findLoadedClass(name);
                return c != null ? c : findClass(name);
            }
        }
    }

    @Test
    void aJnaInAnotherClassLoaderGetsItsOwnGeneratedReader() throws Exception {
        URL jar = Pointer.class.getProtectionDomain().getCodeSource().getLocation();
        try (OwnJna loader = new OwnJna(jar)) {
            Class<?> pointer = loader.loadClass("com.sun.jna.Pointer");
            assertNotSame(Pointer.class, pointer);
            Object p = pointer.getConstructor(long.class).newInstance(0x9abcL);
            JnaHandle reader = JnaHandles.of(pointer);
            assertSame(loader, reader.getClass().getClassLoader());
            assertNotSame(JnaHandles.of(Pointer.class).getClass(), reader.getClass());
            assertEquals(0x9abcL, reader.of(p));
        }
    }
}
