package dev.ncclguard.bridge;

import java.io.IOException;
import java.io.InputStream;

/** Classes whose bytes the native-method tests scan and wrap; their natives are never bound. */
final class NativeFixtures {
    private NativeFixtures() {
    }

    static byte[] bytesOf(Class<?> type) {
        String resource = "/" + type.getName().replace('.', '/') + ".class";
        try (InputStream in = NativeFixtures.class.getResourceAsStream(resource)) {
            return in.readAllBytes();
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Hand-written JNI named as the C functions: static and instance, every kind of argument and result. */
    static class Jni {
        static native int cudaEventQuery(long event);

        static native int ncclCommInitRank(long[] comm, int nranks, byte[] id, int rank);

        native int cudaStreamSynchronize(long stream);

        static native long cudaSetDevice(double a, long b, float c, boolean d, char e, short f, byte g, Object h);

        static native Object cudaEventCreate(long[] event);

        static native void ncclGroupStart();

        static native int somethingElse(long x);

        static int ncclCommDestroy(long comm) {
            return 0; // a Java method of a catalog name: never wrapped
        }
    }

    /** Only a non-native method of a catalog name. */
    static class JavaOnly {
        static int cudaEventQuery(long event) {
            return 0;
        }
    }

    /** An interface-mapped binding: abstract, not native. */
    interface Mapped {
        int cudaEventQuery(long event);
    }

    /** Natives with other names. */
    static class OtherNatives {
        static native int compress(byte[] data);
    }

    /** A hand-written JNI class with other names, mapped by a bindings file. */
    static class Comms {
        static native long createComm(int nranks, byte[] id, int rank);

        static native int destroyComm(long comm);
    }
}
