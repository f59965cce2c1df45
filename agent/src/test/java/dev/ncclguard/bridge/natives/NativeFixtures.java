package dev.ncclguard.bridge.natives;

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

    /** Defines {@code bytes} as class {@code name} in a fresh loader under {@code parent}, and initializes it. */
    static Class<?> define(String name, byte[] bytes, ClassLoader parent) throws ClassNotFoundException {
        ClassLoader loader = new ClassLoader(parent) {
            @Override
            protected Class<?> loadClass(String n, boolean resolve) throws ClassNotFoundException {
                if (n.equals(name)) {
                    Class<?> c = findLoadedClass(n);
                    return c != null ? c : defineClass(n, bytes, 0, bytes.length);
                }
                return super.loadClass(n, resolve);
            }
        };
        return Class.forName(name, true, loader);
    }

    /** Hand-written JNI named as the C functions: static and instance, every kind of argument and result. */
    static class Jni {
        static native int cudaEventQuery(long event);

        static native int ncclCommInitRank(long[] comm, int nranks, byte[] id, int rank);

        native int cudaStreamSynchronize(long stream);

        static native long cudaSetDevice(double a, long b, float c, boolean d, char e, short f, byte g, Object h);

        static native Object cudaEventCreate(long[] event);

        static native void ncclGroupStart();

        static native int ncclAllReduce(long send, long recv, long count, int type, int op, long comm, int stream);

        static native int cudaStreamWaitEvent(short stream, byte event, int flags);

        static native int cudaEventRecordWithFlags(com.sun.jna.Pointer event, com.sun.jna.Pointer stream, int flags);

        static native int cudaStreamCreate(com.sun.jna.Pointer stream);

        static native int somethingElse(long x);

        static int ncclCommDestroy(long comm) {
            return 0; // a Java method of a catalog name: never wrapped
        }
    }

    /**
     * The hot calls, as JNI (handles as longs) and JNA direct mapping (handles as Pointers) declare
     * them, the creations they need, and loops that make them as an application does.
     */
    static class HotCalls {
        static native int cudaEventCreate(long[] event);

        static native int cudaStreamCreate(long[] stream);

        static native int ncclCommInitRank(long[] comm, int nranks, byte[] id, int rank);

        static native int cudaEventRecord(long event, long stream);

        static native int cudaEventQuery(long event);

        static native int cudaEventSynchronize(long event);

        static native int cudaStreamQuery(long stream);

        static native int cudaStreamSynchronize(long stream);

        static native int ncclAllReduce(long send, long recv, long count, int type, int op, long comm, long stream);

        static native int cudaEventRecord(com.sun.jna.Pointer event, com.sun.jna.Pointer stream);

        static native int cudaEventQuery(com.sun.jna.Pointer event);

        static native int ncclAllReduce(com.sun.jna.Pointer send, com.sun.jna.Pointer recv, long count, int type,
                int op, com.sun.jna.Pointer comm, com.sun.jna.Pointer stream);

        /** Creates a communicator, a stream and an event with these handles (the out-arrays are read back). */
        static int create(long comm, long stream, long event) {
            return ncclCommInitRank(new long[] {comm}, 1, new byte[128], 0) | cudaStreamCreate(new long[] {stream})
                    | cudaEventCreate(new long[] {event});
        }

        /** Each round ends with an all-reduce enqueued after the last completion seen: one op pending. */
        static int jni(int n, long comm, long stream, long event) {
            int status = 0;
            for (int i = 0; i < n; i++) {
                status |= cudaStreamSynchronize(stream);
                status |= cudaStreamQuery(stream);
                status |= cudaEventRecord(event, stream);
                status |= cudaEventSynchronize(event);
                status |= cudaEventQuery(event);
                status |= ncclAllReduce(0x1000, 0x2000, 256, 7, 0, comm, stream);
            }
            return status;
        }

        static int jnaDirect(int n, com.sun.jna.Pointer comm, com.sun.jna.Pointer stream, com.sun.jna.Pointer event,
                com.sun.jna.Pointer buffer) {
            int status = 0;
            for (int i = 0; i < n; i++) {
                status |= cudaEventRecord(event, stream);
                status |= cudaEventQuery(event);
                status |= ncclAllReduce(buffer, buffer, 256, 7, 0, comm, stream);
            }
            return status;
        }
    }

    /** A typed JNA handle, as JNA direct mappings often declare cudaEvent_t and cudaStream_t. */
    public static class Handle extends com.sun.jna.PointerType {
        public Handle() {
        }

        public Handle(long address) {
            super(new com.sun.jna.Pointer(address));
        }
    }

    /** The hot calls of JNA direct mapping with PointerType handles, and a loop that makes them. */
    static class PointerTypeCalls {
        static native int cudaEventRecord(Handle event, Handle stream);

        static native int cudaEventQuery(Handle event);

        static native int ncclAllReduce(com.sun.jna.Pointer send, com.sun.jna.Pointer recv, long count, int type,
                int op, Handle comm, Handle stream);

        static int loop(int n, Handle comm, Handle stream, Handle event, com.sun.jna.Pointer buffer) {
            int status = 0;
            for (int i = 0; i < n; i++) {
                status |= cudaEventRecord(event, stream);
                status |= cudaEventQuery(event);
                status |= ncclAllReduce(buffer, buffer, 256, 7, 0, comm, stream);
            }
            return status;
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
