package dev.ncclguard.samples;

import dev.ncclguard.samples.direct.DirectGpu;
import dev.ncclguard.samples.jna.JnaGpu;
import dev.ncclguard.samples.jni.JniGpu;
import java.lang.reflect.InvocationTargetException;
import java.nio.file.Path;
import java.util.List;

/** The bridges a sample can reach NCCL and CUDA through ({@code --bridge}). */
final class Bridges {
    static final List<String> NAMES = List.of("jna", "jna-direct", "jni", "jni-bindings", "javacpp", "ffm");
    static final String HELP = "jna (JNA interface mapping, the default), jna-direct (JNA direct mapping,"
            + " Native.register), jni (hand-written JNI named as the C functions), jni-bindings (hand-written"
            + " JNI with other names: createComm, destroyComm), javacpp (org.bytedeco:cuda on the class path),"
            + " ffm (java.lang.foreign, Java 22+)";

    private Bridges() {
    }

    /**
     * Opens the bridge over the library files {@code libraries} chose and loaded: every bridge
     * binds to those very files (the JNI ones find them loaded under their sonames).
     */
    static Gpu open(String bridge, GpuLibraries libraries) {
        switch (bridge) {
            case "jna":
                return new JnaGpu(libraries.nccl, libraries.cudart);
            case "jna-direct":
                return DirectGpu.open(libraries.ncclFile(), libraries.cudartFile());
            case "jni":
                return JniGpu.open(false);
            case "jni-bindings":
                return JniGpu.open(true);
            case "javacpp":
                return reflective("dev.ncclguard.samples.javacpp.JavaCppGpu",
                        "org.bytedeco:cuda (and org.bytedeco:javacpp) on the class path", libraries);
            case "ffm":
                return reflective("dev.ncclguard.samples.ffm.FfmGpu", "Java 22 or later", libraries);
            default:
                throw new SampleFailure("unknown bridge " + bridge);
        }
    }

    /** A bridge compiled apart (FFM) or needing jars the samples jar does not hold (JavaCPP). */
    private static Gpu reflective(String className, String needs, GpuLibraries libraries) {
        try {
            return (Gpu) Class.forName(className).getMethod("open", Path.class, Path.class)
                    .invoke(null, libraries.ncclFile(), libraries.cudartFile());
        } catch (ClassNotFoundException | NoClassDefFoundError e) {
            throw new SampleFailure("this bridge needs " + needs + " (" + e + ")");
        } catch (InvocationTargetException e) {
            Throwable cause = e.getCause();
            if (cause instanceof NoClassDefFoundError) {
                throw new SampleFailure("this bridge needs " + needs + " (" + cause + ")");
            }
            if (cause instanceof RuntimeException) {
                throw (RuntimeException) cause;
            }
            throw new SampleFailure("cannot open the bridge: " + cause);
        } catch (ReflectiveOperationException e) {
            throw new SampleFailure("cannot open the bridge: " + e);
        }
    }
}
