package dev.ncclguard.bridge;

import dev.ncclguard.bootstrap.JnaHandle;
import dev.ncclguard.log.Log;
import java.lang.invoke.MethodHandles;

/**
 * Readers of the address a handle argument holds, for the hot path of the JNA bridge. Each JNA
 * (the agent never links JNA, which may be any 5.x in any loader) gets a class generated into its
 * own package and class loader that reads its Pointer and PointerType with two instanceof checks
 * and a static call, code the JIT inlines where a method handle held in a field is not. Any other
 * argument goes to {@link #OTHER}, which reads it through {@link BindingValues}, as does everything
 * for a JNA whose package the agent may not define classes in (a named module).
 */
public final class JnaHandles {
    public static final String POINTER = "com/sun/jna/Pointer";
    public static final String POINTER_TYPE = "com/sun/jna/PointerType";
    public static final String STRUCTURE = "com/sun/jna/Structure";
    private static final String SUPER = JnaHandle.class.getName().replace('.', '/');
    private static final String NAME = "NcclguardHandle";
    private static final String GENERATED_NAME = "com.sun.jna." + NAME;

    /** Numbers (handles mapped as long) directly; the rest through BindingValues' readers. */
    public static final JnaHandle OTHER = new JnaHandle() {
        @Override
        public long of(Object arg) {
            return arg instanceof Long ? (Long) arg : BindingValues.handle(arg);
        }
    };

    /** Per JNA Pointer class: its generated reader, or OTHER. */
    private static final ClassValue<JnaHandle> GENERATED = new ClassValue<>() {
        @Override
        protected JnaHandle computeValue(Class<?> pointer) {
            return generate(pointer);
        }
    };

    private JnaHandles() {
    }

    /** The reader for arguments like {@code arg}: its JNA's generated one, else {@link #OTHER}. Never null. */
    public static JnaHandle forArgument(Object arg) {
        for (Class<?> c = arg == null ? null : arg.getClass(); c != null; c = c.getSuperclass()) {
            String name = c.getName();
            if (name.equals("com.sun.jna.Pointer")) {
                return GENERATED.get(c);
            }
            if (name.equals("com.sun.jna.PointerType")) {
                try {
                    return GENERATED.get(Class.forName("com.sun.jna.Pointer", false, c.getClassLoader()));
                } catch (ClassNotFoundException | LinkageError e) {
                    return OTHER;
                }
            }
        }
        return OTHER;
    }

    /**
     * The generated reader of {@code pointer}'s JNA, whose {@code pointer} and getters read that
     * JNA's Pointers without a method handle; null where none can be generated.
     */
    public static JnaHandle generated(Class<?> pointer) {
        JnaHandle h = GENERATED.get(pointer);
        return h == OTHER ? null : h;
    }

    /** Defines the reader of {@code pointer}'s JNA next to it, in its package and loader. */
    private static JnaHandle generate(Class<?> pointer) {
        String name = pointer.getPackageName() + "." + NAME;
        if (!name.equals(GENERATED_NAME)) {
            return OTHER; // a relocated JNA: the class file names com.sun.jna's Pointer
        }
        try {
            // a JNA of a named module: the agent's lookups need to read it, the generated class the hooks
            JnaHandles.class.getModule().addReads(pointer.getModule());
            dev.ncclguard.weave.HookReads.readHooks(pointer.getModule());
            MethodHandles.Lookup lookup = MethodHandles.privateLookupIn(pointer, MethodHandles.lookup());
            Class<?> defined;
            try {
                defined = lookup.defineClass(classFile());
            } catch (LinkageError e) {
                // another thread defined it first (a ClassValue may compute twice)
                defined = Class.forName(name, false, pointer.getClassLoader());
            }
            return (JnaHandle) defined.getConstructor(JnaHandle.class).newInstance(OTHER);
        } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
            Log.once("jna-handle-" + pointer.getClassLoader(), "reading JNA handles of " + pointer.getClassLoader()
                    + " through method handles, a little slower: " + e);
            return OTHER;
        }
    }

    /**
     * The class file of {@code public final class com.sun.jna.NcclguardHandle extends JnaHandle},
     * whose {@code of(arg)} is {@code arg instanceof Pointer ? Pointer.nativeValue((Pointer) arg) :
     * arg instanceof PointerType ? Pointer.nativeValue(((PointerType) arg).getPointer()) :
     * other.of(arg)}; its {@code pointer(arg)} answers the Pointer a Pointer, PointerType or
     * Structure is or holds, and {@code getLong}, {@code getInt}, {@code getByteArray} call
     * Pointer's own. Kept as bytes, not generated at the first JNA call: generating it would load
     * ASM (some 30 classes) into every JNA application's start. JnaHandlesTest generates it with
     * ASM and checks that these bytes are the same.
     */
    public static final String CLASS_FILE = "yv66vgAAADQANAEAG2NvbS9zdW4vam5hL05jY2xndWFyZEhhbmRsZQcAAQEAIWRldi9uY2NsZ3VhcmQvYm9vdHN0cmFwL0puYUhhbmRsZQcAAwEABW90aGVyAQAjTGRldi9uY2NsZ3VhcmQvYm9vdHN0cmFwL0puYUhhbmRsZTsBAAY8aW5pdD4BACYoTGRldi9uY2NsZ3VhcmQvYm9vdHN0cmFwL0puYUhhbmRsZTspVgEAAygpVgwABwAJCgAEAAoMAAUABgkAAgAMAQACb2YBABUoTGphdmEvbGFuZy9PYmplY3Q7KUoBABNjb20vc3VuL2puYS9Qb2ludGVyBwAQAQALbmF0aXZlVmFsdWUBABgoTGNvbS9zdW4vam5hL1BvaW50ZXI7KUoMABIAEwoAEQAUAQAXY29tL3N1bi9qbmEvUG9pbnRlclR5cGUHABYBAApnZXRQb2ludGVyAQAXKClMY29tL3N1bi9qbmEvUG9pbnRlcjsMABgAGQoAFwAaDAAOAA8KAAQAHAEAB3BvaW50ZXIBACYoTGphdmEvbGFuZy9PYmplY3Q7KUxqYXZhL2xhbmcvT2JqZWN0OwEAFWNvbS9zdW4vam5hL1N0cnVjdHVyZQcAIAoAIQAaAQAHZ2V0TG9uZwEAFihMamF2YS9sYW5nL09iamVjdDtKKUoBAAQoSilKDAAjACUKABEAJgEABmdldEludAEAFihMamF2YS9sYW5nL09iamVjdDtKKUkBAAQoSilJDAAoACoKABEAKwEADGdldEJ5dGVBcnJheQEAGChMamF2YS9sYW5nL09iamVjdDtKSSlbQgEABihKSSlbQgwALQAvCgARADABAARDb2RlAQANU3RhY2tNYXBUYWJsZQAxAAIABAAAAAEAEgAFAAYAAAAGAAEABwAIAAEAMgAAABYAAgACAAAACiq3AAsqK7UADbEAAAAAAAEADgAPAAEAMgAAAEAAAgACAAAAKivBABGZAAsrwAARuAAVrSvBABeZAA4rwAAXtgAbuAAVrSq0AA0rtgAdrQAAAAEAMwAAAAQAAg8RAAEAHgAfAAEAMgAAAEAAAQACAAAAKSvBABGZAAUrsCvBABeZAAsrwAAXtgAbsCvBACGZAAsrwAAhtgAisAGwAAAAAQAzAAAABQADCQ4OAAEAIwAkAAEAMgAAABUAAwAEAAAACSvAABEgtgAnrQAAAAAAAQAoACkAAQAyAAAAFQADAAQAAAAJK8AAESC2ACysAAAAAAABAC0ALgABADIAAAAXAAQABQAAAAsrwAARIBUEtgAxsAAAAAAAAA==";

    public static byte[] classFile() {
        return java.util.Base64.getDecoder().decode(CLASS_FILE);
    }
}
