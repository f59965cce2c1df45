package dev.ncclguard.samples.direct;

import com.sun.jna.NativeLibrary;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.IntByReference;
import com.sun.jna.ptr.PointerByReference;

/**
 * cuda_runtime_api.h by JNA direct mapping, instance form: instance native methods, bound by
 * {@code Native.register(DirectCudart.class, library)} when the first instance is made.
 */
final class DirectCudart {
    DirectCudart(NativeLibrary library) {
        synchronized (DirectCudart.class) {
            if (!registered) {
                com.sun.jna.Native.register(DirectCudart.class, library);
                registered = true;
            }
        }
    }

    private static boolean registered;

    native String cudaGetErrorString(int error);

    native int cudaGetDeviceCount(IntByReference count);

    native int cudaSetDevice(int device);

    native int cudaMalloc(PointerByReference devPtr, long size);

    native int cudaFree(Pointer devPtr);

    native int cudaMemcpy(Pointer dst, Pointer src, long count, int kind);

    native int cudaStreamCreate(PointerByReference stream);

    native int cudaStreamSynchronize(Pointer stream);

    native int cudaStreamDestroy(Pointer stream);

    /** Not called by the samples: there for the agent's exit-time queries through this binding. */
    native int cudaStreamQuery(Pointer stream);

    native int cudaEventCreate(PointerByReference event);

    native int cudaEventRecord(Pointer event, Pointer stream);

    native int cudaEventSynchronize(Pointer event);

    native int cudaEventQuery(Pointer event);

    native int cudaEventDestroy(Pointer event);
}
