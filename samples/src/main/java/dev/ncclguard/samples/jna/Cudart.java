package dev.ncclguard.samples.jna;

import com.sun.jna.Library;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.IntByReference;
import com.sun.jna.ptr.PointerByReference;

/**
 * The part of the CUDA runtime API (cuda_runtime_api.h) the samples use, mapped by JNA. Streams
 * ({@code cudaStream_t}) and events ({@code cudaEvent_t}) are opaque pointers, written through
 * {@link PointerByReference} out-parameters.
 */
public interface Cudart extends Library {
    int cudaSuccess = 0;
    int cudaErrorNotReady = 600;
    /** cudaMemcpyKind */
    int cudaMemcpyHostToDevice = 1;
    int cudaMemcpyDeviceToHost = 2;

    String cudaGetErrorString(int error);

    int cudaGetDeviceCount(IntByReference count);

    int cudaSetDevice(int device);

    int cudaMalloc(PointerByReference devPtr, long size);

    int cudaFree(Pointer devPtr);

    int cudaMemcpy(Pointer dst, Pointer src, long count, int kind);

    int cudaStreamCreate(PointerByReference stream);

    int cudaStreamSynchronize(Pointer stream);

    int cudaStreamDestroy(Pointer stream);

    int cudaEventCreate(PointerByReference event);

    int cudaEventRecord(Pointer event, Pointer stream);

    int cudaEventSynchronize(Pointer event);

    /** cudaSuccess once the work before the event's last record is done, cudaErrorNotReady before. */
    int cudaEventQuery(Pointer event);

    int cudaEventDestroy(Pointer event);
}
