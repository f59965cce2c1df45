package dev.ncclguard.bench.jna;

import com.sun.jna.Library;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.IntByReference;
import com.sun.jna.ptr.PointerByReference;

/** The CUDA runtime functions the benchmarks call, mapped the way applications map them: by interface. */
public interface Cudart extends Library {
    int cudaSuccess = 0;
    int cudaErrorNotReady = 600;

    int cudaSetDevice(int device);

    /** Not tracked by the agent: the "other function of the same library". */
    int cudaGetDevice(IntByReference device);

    int cudaGetDeviceCount(IntByReference count);

    int cudaMalloc(PointerByReference devPtr, long size);

    int cudaFree(Pointer devPtr);

    int cudaStreamCreate(PointerByReference stream);

    int cudaStreamSynchronize(Pointer stream);

    int cudaStreamDestroy(Pointer stream);

    int cudaEventCreate(PointerByReference event);

    int cudaEventRecord(Pointer event, Pointer stream);

    int cudaEventQuery(Pointer event);

    int cudaEventSynchronize(Pointer event);

    int cudaEventDestroy(Pointer event);
}
