package dev.ncclguard.samples.jni;

/** cuda_runtime_api.h by hand-written JNI, named as the C functions; handles are longs, out-parameters long[]. */
public final class JniCudart {
    private JniCudart() {
    }

    public static native String cudaGetErrorString(int error);

    public static native int cudaGetDeviceCount(int[] count);

    public static native int cudaSetDevice(int device);

    public static native int cudaMalloc(long[] devPtr, long size);

    public static native int cudaFree(long devPtr);

    /** cudaMemcpy of {@code n} floats from the array to device memory. */
    public static native int copyToDevice(long dst, float[] src, int n);

    /** cudaMemcpy of {@code n} floats from device memory into the array. */
    public static native int copyToHost(float[] dst, long src, int n);

    public static native int cudaStreamCreate(long[] stream);

    public static native int cudaStreamSynchronize(long stream);

    public static native int cudaStreamDestroy(long stream);

    /** Not called by the samples: there for the agent's exit-time queries through this binding. */
    public static native int cudaStreamQuery(long stream);

    public static native int cudaEventCreate(long[] event);

    public static native int cudaEventRecord(long event, long stream);

    public static native int cudaEventSynchronize(long event);

    public static native int cudaEventQuery(long event);

    public static native int cudaEventDestroy(long event);
}
