package dev.ncclguard.bridge.interposer;

import java.lang.annotation.Annotation;
import java.lang.reflect.Executable;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Which frames a Throwable leaves out, for stacks named from the native depot's frames: HotSpot
 * hides the methods of hidden classes (lambda proxies, lambda forms) and the methods its own
 * classes mark {@code @jdk.internal.vm.annotation.Hidden} (Thread.runWith since 21, method handle
 * and reflection plumbing), an annotation it honours only in classes of the boot and platform
 * loaders. The annotation is read by reflection on those classes alone, never on the
 * application's, and once per method.
 */
final class HiddenFrames {
    private static final String HIDDEN = "jdk.internal.vm.annotation.Hidden";
    private static final ClassLoader PLATFORM = ClassLoader.getPlatformClassLoader();
    private static final ConcurrentHashMap<String, Boolean> MARKED = new ConcurrentHashMap<>();

    private HiddenFrames() {
    }

    /** Whether a Throwable leaves out a frame of method {@code name} (descriptor {@code descriptor}) of {@code c}. */
    static boolean hidden(Class<?> c, String name, String descriptor) {
        if (c.isHidden()) {
            return true;
        }
        ClassLoader loader = c.getClassLoader();
        if (loader != null && loader != PLATFORM || descriptor == null) {
            return false;
        }
        return MARKED.computeIfAbsent(c.getName() + '.' + name + descriptor, k -> marked(c, name, descriptor));
    }

    private static boolean marked(Class<?> c, String name, String descriptor) {
        try {
            Executable e = find(c, name, descriptor);
            if (e == null) {
                return false;
            }
            for (Annotation a : e.getDeclaredAnnotations()) {
                if (a.annotationType().getName().equals(HIDDEN)) {
                    return true;
                }
            }
            return false;
        } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
            return false; // a frame kept: the report shows one frame a Throwable would not
        }
    }

    private static Executable find(Class<?> c, String name, String descriptor) throws ClassNotFoundException {
        if (name.equals("<clinit>")) {
            return null;
        }
        Class<?>[] parameters = parameters(c.getClassLoader(), descriptor);
        try {
            return name.equals("<init>") ? c.getDeclaredConstructor(parameters) : c.getDeclaredMethod(name, parameters);
        } catch (NoSuchMethodException e) {
            return null;
        }
    }

    /** The parameter types of a method descriptor, resolved (not initialized) through {@code loader}. */
    static Class<?>[] parameters(ClassLoader loader, String descriptor) throws ClassNotFoundException {
        List<Class<?>> types = new ArrayList<>();
        int i = 1;
        while (descriptor.charAt(i) != ')') {
            int start = i;
            while (descriptor.charAt(i) == '[') {
                i++;
            }
            if (descriptor.charAt(i) == 'L') {
                i = descriptor.indexOf(';', i);
            }
            i++;
            types.add(type(loader, descriptor.substring(start, i)));
        }
        return types.toArray(new Class<?>[0]);
    }

    private static Class<?> type(ClassLoader loader, String d) throws ClassNotFoundException {
        switch (d.charAt(0)) {
            case 'Z': return boolean.class;
            case 'B': return byte.class;
            case 'C': return char.class;
            case 'S': return short.class;
            case 'I': return int.class;
            case 'J': return long.class;
            case 'F': return float.class;
            case 'D': return double.class;
            case 'L': return Class.forName(d.substring(1, d.length() - 1).replace('/', '.'), false, loader);
            default: return Class.forName(d.replace('/', '.'), false, loader); // an array: [Ljava.lang.String;
        }
    }
}
