package dev.ncclguard.bridge.interposer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.util.ArrayList;
import java.util.List;
import java.util.function.IntSupplier;
import org.junit.jupiter.api.Test;

class NamedFramesTest {
    /** A namer standing for the native part: method m is "m<m>" of the class it maps, line = bci. */
    private static final class Namer {
        final List<long[]> asked = new ArrayList<>();
        Class<?> forMethod(long m) {
            return m == 9 ? null : m == 7 ? ((IntSupplier) () -> 1).getClass() : String.class;
        }

        Object[] name(long[] frames) {
            asked.add(frames.clone());
            int n = frames.length / 2;
            Class<?>[] classes = new Class<?>[n];
            String[] methods = new String[n];
            String[] descriptors = new String[n];
            String[] files = new String[n];
            int[] lines = new int[n];
            for (int i = 0; i < n; i++) {
                classes[i] = forMethod(frames[2 * i]);
                methods[i] = frames[2 * i] == 9 ? null : "m" + frames[2 * i];
                descriptors[i] = "()V";
                files[i] = "String.java";
                lines[i] = (int) frames[2 * i + 1];
            }
            return new Object[] {classes, methods, descriptors, files, lines};
        }
    }

    @Test
    void eachDistinctFrameIsNamedOnceAndSharedByTheStacksThatHoldIt() {
        Namer namer = new Namer();
        NamedFrames frames = new NamedFrames(namer::name, false);
        StackTraceElement[] a = frames.of(new long[] {1, 10, 2, 20, 3, 30});
        StackTraceElement[] b = frames.of(new long[] {1, 11, 2, 20, 3, 30});
        assertEquals(2, namer.asked.size());
        assertArrayEquals(new long[] {1, 11}, namer.asked.get(1)); // the one new frame only
        assertEquals("m1", b[0].getMethodName());
        assertEquals(11, b[0].getLineNumber());
        assertSame(a[1], b[1]);
        assertSame(a[2], b[2]);
        assertEquals(4, frames.size()); // 1/10, 1/11, 2/20, 3/30
    }

    @Test
    void hiddenClassesAreLeftOutAndUnloadedOnesAreNamedSoAndAskedAgain() {
        Namer namer = new Namer();
        NamedFrames frames = new NamedFrames(namer::name, false);
        StackTraceElement[] s = frames.of(new long[] {1, 10, 7, 0, 9, 5, 3, 30});
        assertEquals(3, s.length);
        assertEquals("m1", s[0].getMethodName());
        assertEquals(NamedFrames.UNLOADED, s[1].getClassName());
        assertEquals("m3", s[2].getMethodName());
        frames.of(new long[] {9, 5});
        assertArrayEquals(new long[] {9, 5}, namer.asked.get(1)); // not kept: asked again
    }

    @Test
    void underShowHiddenFramesHiddenClassesAreKept() {
        NamedFrames frames = new NamedFrames(new Namer()::name, true);
        StackTraceElement[] s = frames.of(new long[] {1, 10, 7, 0, 3, 30});
        assertEquals(3, s.length);
        assertEquals("m7", s[1].getMethodName());
    }

    /** Defined by a loader of its own (not its parent), so that it can be unloaded. */
    public static final class Victim {
    }

    private static final class OwnLoader extends ClassLoader {
        OwnLoader() {
            super(NamedFramesTest.class.getClassLoader());
        }

        @Override
        protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
            if (!name.equals(Victim.class.getName())) {
                return super.loadClass(name, resolve);
            }
            synchronized (getClassLoadingLock(name)) {
                Class<?> c = findLoadedClass(name);
                if (c == null) {
                    try (java.io.InputStream in = getParent().getResourceAsStream(name.replace('.', '/') + ".class")) {
                        byte[] b = in.readAllBytes();
                        c = defineClass(name, b, 0, b.length);
                    } catch (java.io.IOException e) {
                        throw new ClassNotFoundException(name, e);
                    }
                }
                return c;
            }
        }
    }

    @Test
    void aKeptFrameWhoseClassWasUnloadedIsNamedAgain() throws Exception {
        Class<?>[] victim = {new OwnLoader().loadClass(Victim.class.getName())};
        java.lang.ref.WeakReference<Class<?>> gone = new java.lang.ref.WeakReference<>(victim[0]);
        List<long[]> asked = new ArrayList<>();
        NamedFrames frames = new NamedFrames(f -> {
            asked.add(f.clone());
            Class<?> c = victim[0] != null ? victim[0] : String.class;
            return new Object[] {new Class<?>[] {c}, new String[] {"run"}, new String[] {"()V"},
                new String[] {"Victim.java"}, new int[] {1}};
        }, false);
        assertEquals(Victim.class.getName(), frames.of(new long[] {5, 1})[0].getClassName());
        frames.of(new long[] {5, 1});
        assertEquals(1, asked.size()); // kept while its class lives
        victim[0] = null;
        for (int i = 0; i < 50 && gone.get() != null; i++) {
            System.gc();
        }
        assertNull(gone.get(), "the class was not unloaded");
        assertEquals("java.lang.String", frames.of(new long[] {5, 1})[0].getClassName());
        assertEquals(2, asked.size());
    }

    @Test
    void framesThatCannotBeNamedGiveNoStack() {
        NamedFrames frames = new NamedFrames(f -> null, false);
        assertNull(frames.of(new long[] {1, 10}));
    }
}
