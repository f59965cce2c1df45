package dev.ncclguard.bench;

import com.sun.jna.Native;
import com.sun.jna.NativeLibrary;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.IntByReference;
import dev.ncclguard.bench.jna.Nccl;
import dev.ncclguard.samples.jni.JniCudart;
import dev.ncclguard.samples.jni.JniNccl;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * The hot calls through the bridges of native methods, which the agent wraps under a prefix:
 * JNA direct mapping ({@code Native.register}) and hand-written JNI (the samples' binding).
 * Compared by {@link Compare} with and without the agent; the target is nanoseconds added.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class NativeMethodCalls {
    private static final String JNI_LIBRARY = "dev/ncclguard/samples/jni/linux-x86_64/libncclguard-samples-jni.so";

    /** cuda_runtime_api.h by JNA direct mapping. */
    public static final class DirectCudart {
        public static native int cudaEventRecord(Pointer event, Pointer stream);

        public static native int cudaEventQuery(Pointer event);

        public static native int cudaGetDevice(IntByReference device);
    }

    /** nccl.h by JNA direct mapping. */
    public static final class DirectNccl {
        public static native int ncclAllReduce(Pointer sendbuff, Pointer recvbuff, long count, int datatype, int op,
                Pointer comm, Pointer stream);
    }

    private GpuSession gpu;
    private long event;
    private long stream;
    private long send;
    private long recv;
    private long comm;
    private final IntByReference intOut = new IntByReference();
    private final int[] counts = new int[1];

    @Setup(Level.Trial)
    public void open() {
        gpu = GpuSession.open();
        Native.register(DirectCudart.class, NativeLibrary.getInstance(gpu.libs.cudartName));
        Native.register(DirectNccl.class, NativeLibrary.getInstance(gpu.libs.ncclName));
        loadJni();
        event = Pointer.nativeValue(gpu.event);
        stream = Pointer.nativeValue(gpu.stream);
        send = Pointer.nativeValue(gpu.send);
        recv = Pointer.nativeValue(gpu.recv);
        comm = Pointer.nativeValue(gpu.comm);
    }

    /** The samples' JNI library, bound by soname to the NCCL and cudart that JNA loaded first. */
    static void loadJni() {
        try (InputStream in = NativeMethodCalls.class.getClassLoader().getResourceAsStream(JNI_LIBRARY)) {
            if (in == null) {
                throw new IllegalStateException("no " + JNI_LIBRARY + " on the class path");
            }
            Path file = Files.createTempFile("ncclguard-bench-jni", ".so");
            file.toFile().deleteOnExit();
            Files.copy(in, file, StandardCopyOption.REPLACE_EXISTING);
            System.load(file.toString());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @TearDown(Level.Iteration)
    public void drain() {
        gpu.synchronize();
    }

    @TearDown(Level.Trial)
    public void close() {
        gpu.close();
    }

    @Benchmark
    public int directEventRecord() {
        return DirectCudart.cudaEventRecord(gpu.event, gpu.stream);
    }

    @Benchmark
    public int directEventQuery() {
        return DirectCudart.cudaEventQuery(gpu.event);
    }

    @Benchmark
    public int directAllReduce() {
        return DirectNccl.ncclAllReduce(gpu.send, gpu.recv, GpuSession.COUNT, Nccl.ncclFloat32, Nccl.ncclSum,
                gpu.comm, gpu.stream);
    }

    /** Not tracked. */
    @Benchmark
    public int directGetDevice() {
        return DirectCudart.cudaGetDevice(intOut);
    }

    @Benchmark
    public int jniEventRecord() {
        return JniCudart.cudaEventRecord(event, stream);
    }

    @Benchmark
    public int jniEventQuery() {
        return JniCudart.cudaEventQuery(event);
    }

    @Benchmark
    public int jniAllReduce() {
        return JniNccl.ncclAllReduce(send, recv, GpuSession.COUNT, Nccl.ncclFloat32, Nccl.ncclSum, comm, stream);
    }

    /** Not tracked. */
    @Benchmark
    public int jniGetDeviceCount() {
        return JniCudart.cudaGetDeviceCount(counts);
    }
}
