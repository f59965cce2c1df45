package dev.ncclguard.it.apps;

import java.io.InputStream;
import java.lang.invoke.MethodHandles;
import java.lang.reflect.Field;
import java.lang.reflect.InaccessibleObjectException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * Issue 34's attack on the agent, step by step, as application code: find the agent's class
 * loader (through the entry class's fields, and through the boot hooks' JNA bridge), load
 * JdkInternals in it, make defineInBootLoader accessible and define a class in java.base whose
 * initializer exports jdk.internal.misc to the application; read the Unsafe the tracker holds;
 * write the exit status the exit hook reads; and take a private lookup in the boot hooks (which
 * would define a class next to them). Each step prints one line, "STEP: denied (why)" or "STEP:
 * REACHED"; then the application runs on and leaks a communicator through JNA (OneRankLeaksApp),
 * so the same run shows that the agent still tracks.
 */
public final class AgentDoorProbeApp {
    private static final String ENTRY = "dev.ncclguard.entry.AgentLoader";
    private static final String[] BOOT_CLASSES = {"dev.ncclguard.bootstrap.Hooks", "dev.ncclguard.bootstrap.Live",
        "dev.ncclguard.bootstrap.state.HookState"};

    private AgentDoorProbeApp() {
    }

    public static void main(String[] args) throws Exception {
        List<ClassLoader> loaders = new ArrayList<>();
        ClassLoader viaEntry = loaderViaEntry();
        System.out.println("agent loader via " + ENTRY + ": " + (viaEntry == null ? "none" : "found"));
        if (viaEntry != null) {
            loaders.add(viaEntry);
        }
        Object jna = bootField("jna");
        System.out.println("read Hooks.jna: " + describe(jna));
        if (jna instanceof Reached r && r.value != null) {
            loaders.add(r.value.getClass().getClassLoader());
        }
        System.out.println("loaders to try: " + loaders.size());
        for (ClassLoader loader : loaders) {
            System.out.println("defineInBootLoader: " + defineInBootLoader(loader));
            System.out.println("read Backtraces.UNSAFE: " + describe(readStatic(loader, "dev.ncclguard.track.Backtraces", "UNSAFE")));
        }
        System.out.println("write Hooks.exitStatus: " + writeExitStatus());
        System.out.println("boot hook fields: " + bootFieldsReadable());
        System.out.println("private lookup in Hooks: " + privateLookupInHooks());
        System.out.println("Unsafe.getUnsafe: " + unsafe());
        OneRankLeaksApp.main(new String[0]);
        System.out.println("application done");
    }

    /** A field's value the probe got hold of. */
    private record Reached(Object value) {
    }

    private static String describe(Object outcome) {
        return outcome instanceof Reached r ? "REACHED " + (r.value == null ? "null" : r.value.getClass().getName())
                : String.valueOf(outcome);
    }

    private static String denied(Throwable t) {
        return "denied (" + t.getClass().getSimpleName() + ")";
    }

    /** A ClassLoader in any static field of the entry class or its nested classes. */
    private static ClassLoader loaderViaEntry() {
        try {
            Class<?> entry = Class.forName(ENTRY, true, ClassLoader.getSystemClassLoader());
            List<Class<?>> classes = new ArrayList<>(List.of(entry));
            classes.addAll(List.of(entry.getDeclaredClasses()));
            for (Class<?> c : classes) {
                for (Field f : c.getDeclaredFields()) {
                    if (Modifier.isStatic(f.getModifiers()) && ClassLoader.class.isAssignableFrom(f.getType())) {
                        try {
                            f.setAccessible(true);
                            Object v = f.get(null);
                            if (v != null) {
                                return (ClassLoader) v;
                            }
                        } catch (RuntimeException | ReflectiveOperationException | LinkageError e) {
                            // the next field
                        }
                    }
                }
            }
        } catch (ClassNotFoundException e) {
            return null;
        }
        return null;
    }

    /** A static field of that name in the boot hooks' classes: its value, or why not. */
    private static Object bootField(String name) {
        String outcome = "no such field";
        for (String className : BOOT_CLASSES) {
            Field f;
            try {
                f = Class.forName(className, false, null).getDeclaredField(name);
            } catch (ClassNotFoundException | NoSuchFieldException e) {
                continue;
            }
            try {
                return new Reached(f.get(null));
            } catch (IllegalAccessException e) {
                outcome = denied(e);
            }
            try {
                f.setAccessible(true);
                return new Reached(f.get(null));
            } catch (RuntimeException | IllegalAccessException e) {
                outcome = denied(e);
            }
        }
        return outcome;
    }

    private static Object readStatic(ClassLoader loader, String className, String field) {
        try {
            Field f = loader.loadClass(className).getDeclaredField(field);
            f.setAccessible(true);
            return new Reached(f.get(null));
        } catch (InaccessibleObjectException | IllegalAccessException e) {
            return denied(e);
        } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
            return "failed " + e;
        }
    }

    private static String defineInBootLoader(ClassLoader loader) {
        Method define;
        try {
            define = loader.loadClass("dev.ncclguard.agent.JdkInternals")
                    .getDeclaredMethod("defineInBootLoader", String.class, byte[].class);
            define.setAccessible(true);
        } catch (InaccessibleObjectException e) {
            return denied(e);
        } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
            return "failed " + e;
        }
        try {
            String name = ProbeDoor.class.getName().replace('.', '/');
            String inBase = "java/lang/Ng" + "x".repeat(name.length() - "java/lang/Ng".length());
            byte[] bytes;
            try (InputStream in = AgentDoorProbeApp.class.getResourceAsStream("/" + name + ".class")) {
                bytes = in.readAllBytes();
            }
            replace(bytes, name.getBytes(StandardCharsets.UTF_8), inBase.getBytes(StandardCharsets.UTF_8));
            Class<?> door = (Class<?>) define.invoke(null, inBase.replace('/', '.'), bytes);
            Class.forName(door.getName(), true, null); // its initializer exports jdk.internal.misc
            return "REACHED, defined " + door.getName() + " in " + door.getModule();
        } catch (java.lang.reflect.InvocationTargetException e) {
            return "denied (" + e.getCause() + ")";
        } catch (Exception | LinkageError e) {
            return "failed " + e;
        }
    }

    private static void replace(byte[] bytes, byte[] from, byte[] to) {
        for (int i = 0; i + from.length <= bytes.length; i++) {
            boolean match = true;
            for (int j = 0; j < from.length && match; j++) {
                match = bytes[i + j] == from[j];
            }
            if (match) {
                System.arraycopy(to, 0, bytes, i, to.length);
            }
        }
    }

    private static String writeExitStatus() {
        String outcome = "no such field";
        for (String className : BOOT_CLASSES) {
            Field f;
            try {
                f = Class.forName(className, false, null).getDeclaredField("exitStatus");
            } catch (ClassNotFoundException | NoSuchFieldException e) {
                continue;
            }
            try {
                f.setInt(null, 42);
                return "REACHED";
            } catch (IllegalAccessException e) {
                outcome = denied(e);
            }
            try {
                f.setAccessible(true);
                f.setInt(null, 42);
                return "REACHED";
            } catch (RuntimeException | IllegalAccessException e) {
                outcome = denied(e);
            }
        }
        return outcome;
    }

    /** The boot hooks' static fields that the application can read or make accessible, but constants. */
    private static String bootFieldsReadable() {
        List<String> reached = new ArrayList<>();
        int fields = 0;
        for (String className : BOOT_CLASSES) {
            Class<?> c;
            try {
                c = Class.forName(className, false, null);
            } catch (ClassNotFoundException e) {
                continue;
            }
            for (Field f : c.getDeclaredFields()) {
                int m = f.getModifiers();
                if (Modifier.isFinal(m) && (f.getType().isPrimitive() || f.getType() == String.class)) {
                    continue; // a constant
                }
                fields++;
                try {
                    f.setAccessible(true);
                    f.get(null);
                    reached.add(c.getSimpleName() + "." + f.getName());
                } catch (RuntimeException | IllegalAccessException e) {
                    // denied
                }
            }
        }
        return fields == 0 ? "none found" : reached.isEmpty() ? "denied (all " + fields + ")" : "REACHED " + reached;
    }

    private static String privateLookupInHooks() {
        try {
            Class<?> hooks = Class.forName(BOOT_CLASSES[0], false, null);
            MethodHandles.privateLookupIn(hooks, MethodHandles.lookup());
            return "REACHED";
        } catch (IllegalAccessException e) {
            return denied(e);
        } catch (ClassNotFoundException e) {
            return "no hooks";
        }
    }

    private static String unsafe() {
        try {
            Object unsafe = Class.forName("jdk.internal.misc.Unsafe").getMethod("getUnsafe").invoke(null);
            return "REACHED " + unsafe.getClass().getName();
        } catch (IllegalAccessException e) {
            return "refused";
        } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
            return "failed " + e;
        }
    }
}
